import * as sdk from "@anthropic-ai/sdk";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import type { MessageStreamEvent, ModelRequest } from "../contracts/model.js";
import { LoopguardError } from "../errors.js";
import { createAgent, tool } from "../index.js";
import {
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  type ServerReply,
} from "../testing/index.js";
import { claudeModel, MissingApiKeyError } from "./index.js";

const fakeKey = "sk-ant-test-not-a-real-key";
let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
const start = async (replies: ServerReply[]) => {
  server = await messagesApiServer({ replies });
  return server;
};
const signal = () => new AbortController().signal;
const hi = (model: string): ModelRequest => ({
  model,
  max_tokens: 200,
  messages: [{ role: "user", content: "Hi" }],
});

const fetchPage = tool({
  name: "fetch_page",
  description: "Fetch a page of the order history.",
  input: v.object({ page: v.number() }),
  run: async ({ page }) => `page ${page}: ${"order line; ".repeat(400)}`,
});

describe("claudeModel streaming (real SDK, loopback server)", () => {
  it("stream() yields the API's events and sends stream: true", async () => {
    const api = await start([{ type: "message", message: { content: "Hello from a stream" } }]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const types: string[] = [];
    for await (const event of model.stream(hi(model.model), { signal: signal() }))
      types.push(event.type);
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
    expect(types).toContain("content_block_delta");
    expect(api.requests[0]!.body.stream).toBe(true);
  });

  it("create() streams underneath and returns the assembled message; stream: false sends a plain request", async () => {
    const api = await start([
      { type: "message", message: { content: "assembled" } },
      { type: "message", message: { content: "plain" } },
    ]);
    const streaming = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const response = await streaming.create(hi(streaming.model), { signal: signal() });
    expect(response.content).toEqual([{ type: "text", text: "assembled" }]);
    const plain = claudeModel({ baseURL: api.url, apiKey: fakeKey, stream: false });
    const second = await plain.create(hi(plain.model), { signal: signal() });
    expect(second.content).toEqual([{ type: "text", text: "plain" }]);
    expect(api.requests.map((request) => request.stream)).toEqual([true, false]);
  });

  it("a mid-stream overloaded_error is a retryable overload; a cut stream is a retryable stream_cut", async () => {
    const api = await start([
      { type: "message", message: { content: "half of it" }, stream: { errorAfterEvents: 3 } },
      { type: "message", message: { content: "half of it" }, stream: { cutAfterEvents: 3 } },
    ]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const overloaded = await model
      .create(hi(model.model), { signal: signal() })
      .catch((error) => error);
    expect(overloaded).toBeInstanceOf(sdk.APIError);
    expect(model.classifyError!(overloaded)).toEqual({ retryable: true, kind: "overloaded" });
    const cut = await model.create(hi(model.model), { signal: signal() }).catch((error) => error);
    expect(cut.message).toMatch(/^\[core\] the model's stream ended without message_stop/);
    expect(model.classifyError!(cut)).toEqual({ retryable: true, kind: "stream_cut" });
  });

  it("an abort mid-stream is reported as an abort, not as a cut stream", async () => {
    const api = await start([
      { type: "message", message: { content: "slow words" }, stream: { stallAfterEvents: 4 } },
    ]);
    const model = claudeModel({ baseURL: api.url, apiKey: fakeKey });
    const controller = new AbortController();
    const seen: MessageStreamEvent["type"][] = [];
    const done = (async () => {
      for await (const event of model.stream(hi(model.model), { signal: controller.signal })) {
        seen.push(event.type);
        if (seen.length === 3) setTimeout(() => controller.abort(), 20);
      }
    })().catch((error) => error);
    const error = await done;
    expect(seen).toHaveLength(3);
    expect(error).toBeInstanceOf(sdk.APIUserAbortError);
    expect(model.classifyError!(error)).toEqual({ retryable: false, kind: "aborted" });
  });
});

describe("claudeModel with malformed streams (real SDK)", () => {
  it("retries a step whose SSE was not JSON and completes; the retry says why", async () => {
    const api = await start([
      {
        type: "message",
        message: { content: "x" },
        stream: { raw: "event: message_start\ndata: {not json\n\n" },
      },
      { type: "message", message: { content: "Recovered." } },
    ]);
    const store = memoryEventStore();
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [],
      store,
      retry: { baseDelayMs: 1 },
    });
    const result = await agent.run("Hi");
    expect(result.status).toBe("completed");
    expect(result.answer).toBe("Recovered.");
    const log = await store.read(result.runId);
    expect(log.find((event) => event.type === "model-retry")).toMatchObject({
      kind: "malformed_stream",
      message: expect.stringMatching(/^\[core\] the model's stream sent an event that is not JSON/),
    });
  });

  it("fails a run whose every attempt is cut, with a [core] error that says so", async () => {
    const cut = {
      type: "message" as const,
      message: { content: "cut" },
      stream: { cutAfterEvents: 3 },
    };
    const api = await start([cut, cut]);
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [],
      retry: { baseDelayMs: 1, maxAttempts: 2 },
    });
    const result = await agent.run("Hi");
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(
      /^\[core\] the model call failed \(stream_cut\) after 2 attempts: .*ended without message_stop/,
    );
  });
});

describe("claudeModel cache breakpoints on the conversation", () => {
  it("puts at most 4 breakpoints (system, last tool, the last two user turns) and reads the history back from the cache", async () => {
    const replies: ServerReply[] = [1, 2, 3, 4].map((page) => ({
      type: "message",
      message: {
        content: [{ type: "tool_use", id: `toolu_${page}`, name: "fetch_page", input: { page } }],
      },
    }));
    replies.push({ type: "message", message: { content: "All four pages read." } });
    const api = await start(replies);
    const agent = createAgent({
      model: claudeModel({ baseURL: api.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [fetchPage],
      system: "You are Acme Shop's support agent.",
    });
    const result = await agent.run("Read the order history, pages 1 to 4.");
    expect(result.status).toBe("completed");
    for (const request of api.requests) {
      const count = (request.rawBody.match(/"cache_control"/g) ?? []).length;
      expect(count).toBeLessThanOrEqual(4);
    }
    const last = api.requests.at(-1)!;
    const marked = last.body.messages
      .map((message: { content: unknown }, index: number) =>
        JSON.stringify(message.content).includes("cache_control") ? index : -1,
      )
      .filter((index: number) => index >= 0);
    expect(marked).toEqual([6, 8]);
    // Every step after the first reads what the one before wrote.
    const usages = api.requests.map((request) => request.usage!);
    for (let step = 2; step < usages.length; step += 1) {
      expect(usages[step]!.cache_read_input_tokens).toBeGreaterThan(0);
      expect(usages[step]!.cache_read_input_tokens).toBe(
        (usages[step - 1]!.cache_read_input_tokens ?? 0) +
          (usages[step - 1]!.cache_creation_input_tokens ?? 0),
      );
    }
    expect(result.costUsd).toBeGreaterThan(0);
  });

  it("sends one-hour breakpoints with cache: { ttl: '1h' } and thinking blocks never carry one", async () => {
    const model = claudeModel({ cache: { ttl: "1h" } });
    const body = model.body({
      model: model.model,
      max_tokens: 100,
      system: "S",
      messages: [
        { role: "user", content: "Hi" },
        {
          role: "assistant",
          content: [{ type: "thinking", thinking: "t", signature: "sig" }],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }] },
      ],
    }) as { system: unknown[]; messages: { content: unknown }[] };
    expect(JSON.stringify(body)).not.toContain('"ephemeral"}');
    expect(body.system).toEqual([
      { type: "text", text: "S", cache_control: { type: "ephemeral", ttl: "1h" } },
    ]);
    expect(body.messages[1]!.content).toEqual([
      { type: "thinking", thinking: "t", signature: "sig" },
    ]);
    expect(JSON.stringify(body.messages[2])).toContain('"ttl":"1h"');
  });
});

describe("budgets with the cache", () => {
  it("never crosses maxUsd however the cache behaves: the worst case prices input as 1-hour cache writes", async () => {
    for (const cache of [true, false, { ttl: "1h" as const }]) {
      const replies: ServerReply[] = Array.from({ length: 40 }, (_, index) => ({
        type: "message",
        message: {
          content: [
            { type: "tool_use", id: `toolu_${index}`, name: "fetch_page", input: { page: index } },
          ],
        },
      }));
      const api = await start(replies);
      const maxUsd = 0.2;
      const agent = createAgent({
        model: claudeModel({
          baseURL: api.url,
          apiKey: fakeKey,
          model: "claude-sonnet-5-5",
          cache,
          maxTokens: 512,
        }),
        tools: [fetchPage],
        budget: { maxUsd },
      });
      const result = await agent.run("Read every page of the order history.");
      expect(result.status).toBe("stopped");
      expect(result.costUsd).toBeLessThanOrEqual(maxUsd);
      expect(result.steps).toBeGreaterThan(2);
      await api.close();
      server = undefined;
    }
  });
});

describe("claudeModel thinking", () => {
  it("sends adaptive thinking where the model takes it, and a manual budget where only that exists", () => {
    const adaptive = claudeModel({ model: "claude-sonnet-5-5", thinking: { type: "adaptive" } });
    expect(adaptive.body(hi(adaptive.model)).thinking).toEqual({ type: "adaptive" });
    const manual = claudeModel({
      model: "claude-sonnet-4-5",
      thinking: { type: "enabled", budgetTokens: 8000 },
    });
    expect(manual.body({ ...hi(manual.model), max_tokens: 16_000 }).thinking).toEqual({
      type: "enabled",
      budget_tokens: 8000,
    });
    // A step whose max_tokens the budget shrank takes the thinking budget down with it.
    expect(manual.body({ ...hi(manual.model), max_tokens: 3000 }).thinking).toEqual({
      type: "enabled",
      budget_tokens: 2999,
    });
    expect(() => manual.body({ ...hi(manual.model), max_tokens: 900 })).toThrow(
      /\[core\] claudeModel: thinking needs max_tokens above 1 024/,
    );
    expect(claudeModel().body(hi("claude-opus-5-5"))).not.toHaveProperty("thinking");
  });
});

describe("interleaved thinking over SSE (real SDK)", () => {
  it("passes every thinking block, redacted thinking and signature back byte for byte across tool calls", async () => {
    const turn = (page: number) => [
      {
        type: "thinking" as const,
        thinking: `Page ${page}: the customer jane.doe@example.com wants every order. \u00e9\ud83d\ude00 "quoted"`,
        signature: `EqQBCkgIBxABGAIiQL9vF3pQ2c1nY8kJ0mW4xT7aR5sH6dE2fG9hJ1kL3mN5oP7q${page}==`,
      },
      { type: "redacted_thinking" as const, data: `EmwKAhgBEgy3va3pzix/LafPsn4a${page}` },
      { type: "tool_use" as const, id: `toolu_${page}`, name: "fetch_page", input: { page } },
    ];
    const replies: ServerReply[] = [1, 2, 3].map((page) => ({
      type: "message",
      message: { content: turn(page) },
      stream: { chunkChars: 5 },
    }));
    replies.push({ type: "message", message: { content: "Done." }, stream: { chunkChars: 5 } });
    const api = await start(replies);
    const vault = {
      tokenize: (text: string) => text.replaceAll("jane.doe@example.com", "<EMAIL_1>"),
      reveal: <T>(value: T) => value,
    };
    const result = await createAgent({
      model: claudeModel({
        baseURL: api.url,
        apiKey: fakeKey,
        model: "claude-sonnet-5-5",
        thinking: { type: "adaptive" },
      }),
      tools: [fetchPage],
      vault,
      redact: (value) => JSON.parse(JSON.stringify(value).replaceAll("jane", "[NAME]")),
    }).run("Read pages 1 to 3.");
    expect(result.status).toBe("completed");
    expect(api.requests[0]!.body.thinking).toEqual({ type: "adaptive" });
    for (const [index, request] of api.requests.slice(1).entries()) {
      for (let page = 1; page <= index + 1; page += 1)
        expect(request.rawBody).toContain(JSON.stringify(turn(page)));
    }
  });
});

describe("claudeModel without an API key", () => {
  it("names ANTHROPIC_API_KEY and the offline alternatives instead of the SDK's message", async () => {
    const saved = { key: process.env.ANTHROPIC_API_KEY, token: process.env.ANTHROPIC_AUTH_TOKEN };
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_AUTH_TOKEN;
    const savedConfig = process.env.ANTHROPIC_CONFIG_DIR;
    process.env.ANTHROPIC_CONFIG_DIR = "/nonexistent/loopguard-test";
    try {
      const api = await start([{ type: "message", message: { content: "never" } }]);
      const model = claudeModel({ baseURL: api.url });
      const error = await model
        .create(hi(model.model), { signal: signal() })
        .catch((caught) => caught);
      expect(MissingApiKeyError.isInstance(error)).toBe(true);
      expect(LoopguardError.isInstance(error)).toBe(true);
      expect(error.message).toMatch(/^\[core\] claudeModel has no API key: set ANTHROPIC_API_KEY/);
      expect(error.message).toContain("scriptedModel");
      expect(error.message).toContain("loopguard demo");
      expect(model.classifyError!(error)).toEqual({ retryable: false, kind: "missing_api_key" });
      expect(api.requests).toHaveLength(0);
    } finally {
      if (saved.key !== undefined) process.env.ANTHROPIC_API_KEY = saved.key;
      if (saved.token !== undefined) process.env.ANTHROPIC_AUTH_TOKEN = saved.token;
      if (savedConfig === undefined) delete process.env.ANTHROPIC_CONFIG_DIR;
      else process.env.ANTHROPIC_CONFIG_DIR = savedConfig;
    }
  });
});
