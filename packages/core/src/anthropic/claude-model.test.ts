import { readFileSync } from "node:fs";
import Anthropic, * as sdk from "@anthropic-ai/sdk";
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ModelResponse } from "../contracts/model.js";
import { InvalidArgumentError, LoopguardError } from "../errors.js";
import { createAgent, tool } from "../index.js";
import { type MessagesApiServer, messagesApiServer, type ServerReply } from "../testing/index.js";
import { classifyClaudeError, claudeModel } from "./index.js";

const fixture = (name: string): ModelResponse =>
  JSON.parse(readFileSync(new URL(`./__fixtures__/${name}.json`, import.meta.url), "utf8"));
const fakeKey = "sk-ant-test-not-a-real-key";

const lookupOrder = tool({
  name: "lookup_order",
  description: "Look up an order by its id.",
  input: v.object({ order_id: v.pipe(v.string(), v.description("The order id, e.g. A1001")) }),
  run: async ({ order_id }) => ({ order_id, status: "delivered", total: 89.99 }),
});
const issueRefund = tool({
  name: "issue_refund",
  description: "Refund money to the customer's original payment method.",
  input: v.object({ order_id: v.string(), amount: v.number() }),
  run: async () => ({ refunded: true }),
});

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(
  replies: ReadonlyArray<ServerReply | ModelResponse>,
  options: { apiKey?: string } = {},
) {
  server = await messagesApiServer({ replies, ...options });
  return server;
}

describe("claudeModel request shape (real SDK, loopback server)", () => {
  it("sends effort, auto tool choice, cache breakpoints and strict tools, and nothing it should not", async () => {
    const api = await start([
      fixture("opus-thinking-tool-use"),
      fixture("opus-thinking-final-answer"),
    ]);
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey, effort: "high", maxTokens: 2048 }),
      tools: [issueRefund, lookupOrder],
      system: "You are Acme Shop's support agent.",
    });
    const result = await agent.run("Order A1001 arrived broken, refund please");
    expect(result.status).toBe("completed");
    expect(result.answer).toBe(
      "Order A1001 was delivered on 2026-11-27 for $89.99. I can start a refund for the damaged item.",
    );
    expect(api.requests).toHaveLength(2);

    const first = api.requests[0]!;
    expect(first.path).toBe("/v1/messages");
    expect(first.headers["x-api-key"] ?? first.headers.authorization?.replace(/^Bearer /, "")).toBe(
      fakeKey,
    );
    expect(first.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(first.headers["x-stainless-retry-count"]).toBe("0");
    const body = first.body;
    expect(Object.keys(body).sort()).toEqual([
      "max_tokens",
      "messages",
      "model",
      "output_config",
      "stream",
      "system",
      "tool_choice",
      "tools",
    ]);
    expect(body.stream).toBe(true);
    expect(body.model).toBe("claude-opus-5-5");
    expect(body.max_tokens).toBe(2048);
    expect(body.output_config).toEqual({ effort: "high" });
    expect(body).not.toHaveProperty("temperature");
    expect(body).not.toHaveProperty("thinking");
    expect(body.tool_choice).toEqual({ type: "auto" });
    expect(body.system).toEqual([
      {
        type: "text",
        text: "You are Acme Shop's support agent.",
        cache_control: { type: "ephemeral" },
      },
    ]);
    expect(body.tools.map((spec: { name: string }) => spec.name)).toEqual([
      "issue_refund",
      "lookup_order",
    ]);
    expect(body.tools[0]).not.toHaveProperty("cache_control");
    expect(body.tools[1].cache_control).toEqual({ type: "ephemeral" });
    for (const spec of body.tools) {
      expect(spec.strict).toBe(true);
      expect(spec.input_schema.additionalProperties).toBe(false);
    }
    // The conversation's tail carries the third breakpoint.
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          {
            type: "text",
            text: "Order A1001 arrived broken, refund please",
            cache_control: { type: "ephemeral" },
          },
        ],
      },
    ]);
  });

  it("passes thinking blocks and signatures back byte for byte, and the tool result after them", async () => {
    const recorded = fixture("opus-thinking-tool-use");
    const api = await start([recorded, fixture("opus-thinking-final-answer")]);
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey }),
      tools: [lookupOrder],
    });
    await agent.run("Where is A1001?");
    const second = api.requests[1]!;
    // The exact bytes of the recorded content appear in the next request's body.
    expect(second.rawBody).toContain(JSON.stringify(recorded.content));
    expect(second.body.messages[1]).toEqual({ role: "assistant", content: recorded.content });
    expect(second.body.messages[2]).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_01Hc8nRwQ4Zt7Yp2Ks5VbM3x",
          content: '{"order_id":"A1001","status":"delivered","total":89.99}',
          cache_control: { type: "ephemeral" },
        },
      ],
    });
    expect(second.body.messages).toHaveLength(3);
  });

  it("returns the response unchanged, thinking and redacted thinking included", async () => {
    const recorded = fixture("opus-thinking-final-answer");
    const api = await start([recorded]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const response = await model.create(
      { model: model.model, max_tokens: 100, messages: [{ role: "user", content: "Hi" }] },
      { signal: new AbortController().signal },
    );
    expect(JSON.parse(JSON.stringify(response))).toEqual(recorded);
    expect(api.requests[0]!.body).not.toHaveProperty("tools");
    expect(api.requests[0]!.body).not.toHaveProperty("tool_choice");
    expect(api.requests[0]!.body).not.toHaveProperty("system");
  });

  it("continues a pause_turn by sending the assistant's own turn back as the last message", async () => {
    const paused = fixture("opus-pause-turn");
    const api = await start([paused, fixture("opus-thinking-final-answer")]);
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey }),
      tools: [lookupOrder],
    });
    const result = await agent.run("Where is A1001?");
    expect(result.status).toBe("completed");
    const messages = api.requests[1]!.body.messages;
    expect(messages).toHaveLength(2);
    expect(messages[1]).toEqual({ role: "assistant", content: paused.content });
    expect(api.requests[1]!.rawBody).toContain(JSON.stringify(paused.content));
  });

  it("leaves cache breakpoints out when cache is false", async () => {
    const api = await start([{ type: "message", message: { content: "ok" } }]);
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey, cache: false }),
      tools: [lookupOrder],
      system: "Be brief.",
    });
    await agent.run("Hi");
    expect(api.requests[0]!.rawBody).not.toContain("cache_control");
    expect(api.requests[0]!.body.system).toEqual([{ type: "text", text: "Be brief." }]);
  });

  it("does not mutate the request it is given", async () => {
    const api = await start([{ type: "message", message: { content: "ok" } }]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const request = {
      model: model.model,
      max_tokens: 10,
      system: "S",
      messages: [{ role: "user" as const, content: "Hi" }],
      tools: [lookupOrder.spec],
    };
    const before = structuredClone(request);
    await model.create(request, { signal: new AbortController().signal });
    expect(request).toEqual(before);
    expect(lookupOrder.spec).not.toHaveProperty("cache_control");
  });

  it("refuses a forced tool choice before sending anything", async () => {
    const api = await start([]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const attempt = model.create(
      {
        model: model.model,
        max_tokens: 10,
        messages: [{ role: "user", content: "Hi" }],
        tools: [lookupOrder.spec],
        tool_choice: { type: "tool", name: "lookup_order" },
      },
      { signal: new AbortController().signal },
    );
    await expect(attempt).rejects.toThrow(/\[core\] claudeModel: tool_choice .* forces a tool/);
    expect(api.requests).toHaveLength(0);
  });
});

describe("claudeModel errors (real SDK error classes from real HTTP statuses)", () => {
  const signal = () => new AbortController().signal;
  const call = async (reply: ServerReply, options: { timeoutMs?: number } = {}) => {
    const api = await start([reply]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey, ...options });
    const error = await model
      .create(
        { model: model.model, max_tokens: 10, messages: [{ role: "user", content: "Hi" }] },
        { signal: signal() },
      )
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    return { error, classification: model.classifyError!(error), api };
  };

  it.each([
    [400, sdk.BadRequestError, "bad_request"],
    [401, sdk.AuthenticationError, "authentication"],
    [403, sdk.PermissionDeniedError, "permission"],
    [404, sdk.NotFoundError, "not_found"],
    [413, sdk.APIError, "request_too_large"],
  ] as const)("%i fails at once as %s", async (status, errorClass, kind) => {
    const { error, classification, api } = await call({ type: "error", status });
    expect(error).toBeInstanceOf(errorClass);
    expect(classification).toEqual({ retryable: false, kind, status });
    expect((error as sdk.APIError).requestID).toMatch(/^req_loopback_/);
    expect(api.requests).toHaveLength(1);
  });

  it("429 is a retryable RateLimitError with retry-after in ms", async () => {
    const { error, classification } = await call({ type: "error", status: 429, retryAfter: 3 });
    expect(error).toBeInstanceOf(sdk.RateLimitError);
    expect((error as sdk.APIError).type).toBe("rate_limit_error");
    expect(classification).toEqual({
      retryable: true,
      kind: "rate_limit",
      status: 429,
      retryAfterMs: 3000,
    });
  });

  it("retry-after-ms wins over retry-after", async () => {
    const { classification } = await call({
      type: "error",
      status: 429,
      retryAfter: 3,
      retryAfterMs: 250,
    });
    expect(classification.retryAfterMs).toBe(250);
  });

  it("529 is a retryable overload", async () => {
    const { error, classification } = await call({ type: "error", status: 529 });
    expect(error).toBeInstanceOf(sdk.APIError);
    expect((error as sdk.APIError).status).toBe(529);
    expect(classification).toEqual({ retryable: true, kind: "overloaded", status: 529 });
  });

  it("500 is a retryable InternalServerError", async () => {
    const { error, classification } = await call({ type: "error", status: 500 });
    expect(error).toBeInstanceOf(sdk.InternalServerError);
    expect(classification).toEqual({ retryable: true, kind: "server_error", status: 500 });
  });

  it("a dropped connection is a retryable APIConnectionError", async () => {
    const { error, classification } = await call({ type: "drop" });
    expect(error).toBeInstanceOf(sdk.APIConnectionError);
    expect(classification).toEqual({ retryable: true, kind: "connection" });
  });

  it("a server that never answers is a retryable APIConnectionTimeoutError at timeoutMs", async () => {
    const started = performance.now();
    const { error, classification } = await call({ type: "hang" }, { timeoutMs: 150 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(error).toBeInstanceOf(sdk.APIConnectionTimeoutError);
    expect(classification).toEqual({ retryable: true, kind: "connection_timeout" });
  });

  it("an aborted call is not retryable", async () => {
    const api = await start([{ type: "message", message: { content: "late" }, delayMs: 2_000 }]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stop")), 50);
    const error = await model
      .create(
        { model: model.model, max_tokens: 10, messages: [{ role: "user", content: "Hi" }] },
        { signal: controller.signal },
      )
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(sdk.APIUserAbortError);
    expect(model.classifyError!(error)).toEqual({ retryable: false, kind: "aborted" });
  });

  it("the server checks the API key: a wrong key is an AuthenticationError", async () => {
    const api = await start([], { apiKey: "sk-ant-the-right-one" });
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const error = await model
      .create(
        { model: model.model, max_tokens: 10, messages: [{ role: "user", content: "Hi" }] },
        { signal: signal() },
      )
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(sdk.AuthenticationError);
    expect(api.calls).toBe(0);
  });

  it("turns off the retries of a client it is given", async () => {
    const api = await start([
      { type: "error", status: 529 },
      { type: "message", message: { content: "ok" } },
    ]);
    const client = new Anthropic({ baseURL: api.url, apiKey: fakeKey, maxRetries: 5 });
    const model = claudeModel({ client });
    await expect(
      model.create(
        { model: model.model, max_tokens: 10, messages: [{ role: "user", content: "Hi" }] },
        { signal: signal() },
      ),
    ).rejects.toBeInstanceOf(sdk.APIError);
    expect(api.requests).toHaveLength(1);
  });

  it("classifies errors that are not the SDK's by status and name", () => {
    expect(
      classifyClaudeError(
        Object.assign(new Error("x"), { status: 503, headers: { "retry-after": "2" } }),
      ),
    ).toEqual({ retryable: true, kind: "unavailable", status: 503, retryAfterMs: 2000 });
    expect(classifyClaudeError(new InvalidArgumentError("[core] bad"))).toEqual({
      retryable: false,
      kind: "invalid_request",
    });
    expect(classifyClaudeError(new sdk.AnthropicError("Streaming is required"))).toEqual({
      retryable: false,
      kind: "client_error",
    });
  });
});

describe("claudeModel options", () => {
  it.each([
    [{ effort: "extreme" }, /effort must be one of low, medium, high, xhigh, max, got "extreme"/],
    [{ maxTokens: 0 }, /maxTokens must be a positive integer/],
    [{ maxTokens: 1.5 }, /maxTokens must be a positive integer/],
    [{ timeoutMs: -1 }, /timeoutMs must be a positive number/],
    [{ baseURL: "not a url" }, /baseURL must be an absolute URL/],
    [{ model: "" }, /model must be a model id/],
    [{ cache: "yes" }, /cache must be true, false, \{ ttl: "5m" \} or \{ ttl: "1h" \}/],
    [{ cache: { ttl: "2h" } }, /cache must be true, false/],
    [{ stream: "yes" }, /stream must be true or false/],
    [
      { thinking: { type: "enabled", budgetTokens: 100 } },
      /budgetTokens an integer of at least 1024/,
    ],
    [
      { thinking: { type: "enabled", budgetTokens: 4096 } },
      /claude-opus-5-5 refuses thinking.type "enabled"/,
    ],
    [
      { model: "claude-sonnet-4-5", thinking: { type: "adaptive" } },
      /claude-sonnet-4-5 does not support adaptive thinking/,
    ],
    [{ client: {} }, /client must be an @anthropic-ai\/sdk client/],
    [
      { client: new Anthropic({ apiKey: fakeKey }), apiKey: fakeKey },
      /either client or apiKey\/baseURL/,
    ],
  ])("rejects %j", (options, message) => {
    expect(() => claudeModel(options as never)).toThrow(InvalidArgumentError);
    expect(() => claudeModel(options as never)).toThrow(message);
    expect(() => claudeModel(options as never)).toThrow(/^\[core\] claudeModel: /);
  });

  it("has sensible defaults", () => {
    const model = claudeModel();
    expect(model.model).toBe("claude-opus-5-5");
    expect(model.effort).toBe("medium");
    expect(model.defaultMaxTokens).toBe(16_000);
    expect(
      model.body({
        model: model.model,
        max_tokens: 5,
        messages: [{ role: "user", content: "Hi" }],
      }),
    ).toEqual({
      model: "claude-opus-5-5",
      max_tokens: 5,
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "Hi", cache_control: { type: "ephemeral" } }],
        },
      ],
      output_config: { effort: "medium" },
      stream: true,
    });
  });

  it("says how to install the SDK when it is missing", async () => {
    vi.resetModules();
    vi.doMock("@anthropic-ai/sdk", () => {
      throw Object.assign(
        new Error("Cannot find package '@anthropic-ai/sdk' imported from claude-model.ts"),
        { code: "ERR_MODULE_NOT_FOUND" },
      );
    });
    try {
      const fresh = await import("./claude-model.js");
      const model = fresh.claudeModel({ apiKey: fakeKey, baseURL: "http://127.0.0.1:9" });
      const error = await model
        .create(
          { model: model.model, max_tokens: 5, messages: [{ role: "user", content: "Hi" }] },
          { signal: new AbortController().signal },
        )
        .catch((caught: unknown) => caught);
      expect(error, String((error as Error)?.stack)).toSatisfy(LoopguardError.isInstance);
      expect((error as Error).message).toBe(
        "[core] claudeModel needs @anthropic-ai/sdk: pnpm add @anthropic-ai/sdk",
      );
    } finally {
      vi.doUnmock("@anthropic-ai/sdk");
      vi.resetModules();
    }
  });
});
