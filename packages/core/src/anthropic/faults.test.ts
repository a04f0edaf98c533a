import * as sdk from "@anthropic-ai/sdk";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { ModelRequest } from "../contracts/model.js";
import { tool } from "../index.js";
import {
  failingTool,
  faultyModel,
  faultyTool,
  flakyTool,
  scriptedModel,
  slowTool,
} from "../testing/index.js";

const request: ModelRequest = {
  model: "claude-opus-5-5",
  max_tokens: 50,
  messages: [{ role: "user", content: "Hi" }],
  tools: [{ name: "lookup_order", description: "Look up.", input_schema: { type: "object" } }],
};
const signal = new AbortController().signal;
const toolCall = {
  content: [
    { type: "text" as const, text: "Looking it up now." },
    {
      type: "tool_use" as const,
      id: "toolu_1",
      name: "lookup_order",
      input: { order_id: "A1001" },
    },
  ],
};

describe("faultyModel", () => {
  it("throws real SDK error instances with real headers on the chosen calls", async () => {
    const model = faultyModel(scriptedModel([{ content: "ok" }]), {
      errors: { 1: "429", 2: "529", 3: "connection", 4: "timeout", 5: "400" },
      retryAfterMs: 120,
    });
    const errors: unknown[] = [];
    for (let call = 0; call < 5; call += 1)
      errors.push(await model.create(request, { signal }).catch((error: unknown) => error));
    expect(errors[0]).toBeInstanceOf(sdk.RateLimitError);
    expect((errors[0] as sdk.APIError).headers?.get("retry-after-ms")).toBe("120");
    expect((errors[0] as sdk.APIError).requestID).toMatch(/^req_faulty_/);
    expect(errors[1]).toBeInstanceOf(sdk.APIError);
    expect((errors[1] as sdk.APIError).status).toBe(529);
    expect((errors[1] as sdk.APIError).type).toBe("overloaded_error");
    expect(errors[2]).toBeInstanceOf(sdk.APIConnectionError);
    expect(errors[3]).toBeInstanceOf(sdk.APIConnectionTimeoutError);
    expect(errors[4]).toBeInstanceOf(sdk.BadRequestError);
    expect((errors[4] as sdk.APIError).headers?.get("retry-after-ms")).toBeNull();
    expect(errors.map((error) => model.classifyError!(error))).toEqual([
      { retryable: true, kind: "rate_limit", status: 429, retryAfterMs: 120 },
      { retryable: true, kind: "overloaded", status: 529, retryAfterMs: 120 },
      { retryable: true, kind: "connection" },
      { retryable: true, kind: "connection_timeout" },
      { retryable: false, kind: "bad_request", status: 400 },
    ]);
    expect(model.calls).toBe(5);
    expect(model.innerCalls).toBe(0);
    expect(await model.create(request, { signal })).toMatchObject({
      content: [{ type: "text", text: "ok" }],
    });
    expect(model.injected.map((fault) => fault.fault)).toEqual([
      "429",
      "529",
      "connection",
      "timeout",
      "400",
    ]);
  });

  it("rewrites replies: malformed tool input, a cut at max_tokens, pause_turn, refusal", async () => {
    const model = faultyModel(scriptedModel([toolCall, toolCall, toolCall, toolCall]), {
      malformedToolInput: [1],
      maxTokens: [2],
      pauseTurn: [3],
      refusal: [4],
    });
    const malformed = await model.create(request, { signal });
    expect(malformed.stop_reason).toBe("tool_use");
    expect(typeof (malformed.content[1] as { input: unknown }).input).toBe("string");
    const cut = await model.create(request, { signal });
    expect(cut).toMatchObject({ stop_reason: "max_tokens", usage: { output_tokens: 50 } });
    expect(cut.content.at(-1)).toMatchObject({ type: "tool_use", input: {} });
    const paused = await model.create(request, { signal });
    expect(paused).toMatchObject({
      stop_reason: "pause_turn",
      content: [{ type: "text", text: "Looking it up now." }],
    });
    const refused = await model.create(request, { signal });
    expect(refused).toMatchObject({ stop_reason: "refusal", content: [] });
  });

  it("validates its options", () => {
    const base = scriptedModel([]);
    expect(() => faultyModel(base, { errors: { 0: "429" } })).toThrow(/1-based call numbers/);
    expect(() => faultyModel(base, { errors: { 1: "418" as never } })).toThrow(
      /must be one of 400, 401/,
    );
    expect(() => faultyModel(base, { refusal: [0] })).toThrow(
      /refusal must be an array of 1-based call numbers/,
    );
    expect(() => faultyModel({} as never)).toThrow(/must implement the Model contract/);
  });
});

describe("faultyTool", () => {
  const base = () =>
    tool({
      name: "lookup_order",
      description: "Look up.",
      input: v.object({}),
      run: async () => "found",
    });
  const context = (controller = new AbortController()) => ({
    idempotencyKey: "r:t",
    signal: controller.signal,
    runId: "r",
    agentId: "a",
    toolUseId: "t",
    attempt: 1,
  });

  it("counts calls, failures and effects", async () => {
    const flaky = flakyTool(base(), 2);
    await expect(flaky.run({}, context())).rejects.toMatchObject({
      code: "tool_error",
      transient: true,
    });
    await expect(flaky.run({}, context())).rejects.toThrow(/failed on purpose/);
    await expect(flaky.run({}, context())).resolves.toBe("found");
    expect([flaky.calls, flaky.failures, flaky.effects]).toEqual([3, 2, 1]);
    const failing = failingTool(base(), { transient: false });
    await expect(failing.run({}, context())).rejects.toMatchObject({ transient: false });
    expect(failing.effects).toBe(0);
  });

  it("a slow tool stops when its signal aborts", async () => {
    const slow = slowTool(base(), 5_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("timeout")), 20);
    await expect(slow.run({}, context(controller))).rejects.toThrow("timeout");
    expect(slow.effects).toBe(0);
  });

  it("keeps the base tool's definition and validates its options", () => {
    const original = base();
    const wrapped = faultyTool(original, { mode: "fail-always" });
    expect(wrapped.spec).toBe(original.spec);
    expect(wrapped.parse({ extra: 1 })).toEqual(original.parse({ extra: 1 }));
    expect(() => faultyTool(original, { mode: "explode" as never })).toThrow(
      /mode must be one of hang, slow, fail-times, fail-always/,
    );
    expect(() => faultyTool(original, { mode: "slow", delayMs: -1 })).toThrow(
      /delayMs must be a non-negative number/,
    );
  });
});
