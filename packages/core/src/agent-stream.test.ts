import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentStreamEvent } from "./agent-stream.js";
import { claudeModel } from "./anthropic/index.js";
import type { ContentBlock, MessageStreamEvent, Model } from "./contracts/model.js";
import { createAgent, tool } from "./index.js";
import {
  faultyModel,
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  scriptedModel,
} from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  idempotent: true,
  run: async ({ order_id }) => `order ${order_id}: delivered, contact jane.doe@example.com`,
});
const use = (id: string, input: unknown = { order_id: "A1001" }): ContentBlock => ({
  type: "tool_use",
  id,
  name: "lookup_order",
  input,
});
const answer = "Order A1001 was delivered on Tuesday; the refund is on its way.";

async function collect(stream: AsyncIterable<AgentStreamEvent>) {
  const events: AgentStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}
const texts = (events: AgentStreamEvent[]) =>
  events.flatMap((event) => (event.type === "text-delta" ? [event.text] : [])).join("");

/** The shown text after honouring stream-reset: what a UI that discards on reset displays. */
function shown(events: AgentStreamEvent[]) {
  let out = "";
  let stepStart = 0;
  for (const event of events) {
    if (event.type === "text-delta") out += event.text;
    if (event.type === "step-end") stepStart = out.length;
    if (event.type === "stream-reset") out = out.slice(0, stepStart);
  }
  return out;
}

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("agent.stream", () => {
  it("streams text deltas, a tool call only once complete, its decision and result, step ends and run-end", async () => {
    const model = scriptedModel(
      [{ content: [{ type: "text", text: "Let me check." }, use("toolu_1")] }, { content: answer }],
      { chunkChars: 5 },
    );
    const agent = createAgent({ model, tools: [lookup] });
    const stream = agent.stream("Where is A1001?");
    const events = await collect(stream);
    const result = await stream.result;
    expect(result.status).toBe("completed");
    expect(result.answer).toBe(answer);
    expect(texts(events)).toBe(`Let me check.${answer}`);
    expect(events.filter((event) => event.type === "text-delta").length).toBeGreaterThan(10);
    const kinds = events.map((event) => event.type).filter((type) => type !== "text-delta");
    expect(kinds).toEqual([
      "tool-call",
      "step-end",
      "decision",
      "tool-result",
      "step-end",
      "run-end",
    ]);
    const call = events.find((event) => event.type === "tool-call");
    expect(call).toMatchObject({
      toolUseId: "toolu_1",
      tool: "lookup_order",
      input: { order_id: "A1001" },
    });
    expect(events.at(-1)).toMatchObject({ type: "run-end", status: "completed", answer });
  });

  it("agent.run streams underneath; a model without stream() gives each text block in one delta", async () => {
    let created = 0;
    const streaming = scriptedModel([{ content: answer }]);
    const spy: Model = {
      ...streaming,
      create: (...args) => {
        created += 1;
        return streaming.create(...args);
      },
    };
    spy.stream = streaming.stream!.bind(streaming);
    expect((await createAgent({ model: spy, tools: [] }).run("Hi")).answer).toBe(answer);
    expect(created).toBe(0);
    const plain = scriptedModel([{ content: answer }], { noStream: true });
    const events = await collect(createAgent({ model: plain, tools: [] }).stream("Hi"));
    expect(events.filter((event) => event.type === "text-delta")).toEqual([
      expect.objectContaining({ text: answer }),
    ]);
  });

  it("retries a stream that fails before content without a reset, and after content with one stream-reset; no text is duplicated", async () => {
    const model = faultyModel(
      scriptedModel([{ content: answer }, { content: answer }, { content: answer }], {
        chunkChars: 4,
      }),
      {
        streamErrors: { 1: { afterEvents: 1 }, 2: { afterEvents: 8 } },
      },
    );
    const agent = createAgent({ model, tools: [], retry: { baseDelayMs: 1 } });
    const stream = agent.stream("Where is A1001?");
    const events = await collect(stream);
    const result = await stream.result;
    expect(result.status).toBe("completed");
    expect(result.answer).toBe(answer);
    expect(events.filter((event) => event.type === "stream-reset")).toHaveLength(1);
    expect(shown(events)).toBe(answer);
    expect(model.calls).toBe(3);
  });

  it("counts the usage a failed attempt reported (message_start) against the budget", async () => {
    const replies = () => [
      { content: answer, usage: { input_tokens: 1000 } },
      { content: answer, usage: { input_tokens: 1000 } },
    ];
    const clean = await createAgent({ model: scriptedModel(replies().slice(1)), tools: [] }).run(
      "Hi",
    );
    const failing = faultyModel(scriptedModel(replies()), {
      streamErrors: { 1: { afterEvents: 4 } },
    });
    const retried = await createAgent({ model: failing, tools: [], retry: { baseDelayMs: 1 } }).run(
      "Hi",
    );
    expect(retried.status).toBe("completed");
    expect(retried.costUsd).toBeGreaterThan(clean.costUsd * 1.5);
  });

  it("aborts a stalled stream at idleTimeoutMs and retries it", async () => {
    const model = faultyModel(scriptedModel([{ content: answer }, { content: answer }]), {
      stalls: { 1: 3 },
    });
    const started = performance.now();
    const stream = createAgent({
      model,
      tools: [],
      idleTimeoutMs: 80,
      retry: { baseDelayMs: 1 },
    }).stream("Hi");
    const events = await collect(stream);
    const result = await stream.result;
    expect(performance.now() - started).toBeGreaterThanOrEqual(75);
    expect(result.status).toBe("completed");
    expect(shown(events)).toBe(answer);
    expect(model.injected).toEqual([{ call: 1, fault: "stall" }]);
  });

  it("never judges or runs a tool call whose JSON did not parse: the step is retried", async () => {
    let runs = 0;
    const counted = tool({
      name: "lookup_order",
      description: "Look up an order.",
      input: v.object({ order_id: v.string() }),
      run: async () => {
        runs += 1;
        return "ok";
      },
    });
    const model = faultyModel(
      scriptedModel([
        { content: [use("toolu_1")] },
        { content: [use("toolu_1")] },
        { content: answer },
      ]),
      {
        invalidToolJson: [1],
      },
    );
    const store = memoryEventStore();
    const stream = createAgent({
      model,
      tools: [counted],
      store,
      retry: { baseDelayMs: 1 },
    }).stream("Hi");
    const events = await collect(stream);
    const result = await stream.result;
    expect(result.status).toBe("completed");
    expect(runs).toBe(1);
    expect(events.filter((event) => event.type === "tool-call")).toHaveLength(1);
    const log = await store.read(result.runId);
    expect(log.filter((event) => event.type === "model-retry")).toEqual([
      expect.objectContaining({ kind: "malformed_tool_input" }),
    ]);
  });

  it("skips an unknown event type and records it; fails closed on an unknown delta for a tool call, storing nothing partial as final", async () => {
    const messageStart = {
      type: "message_start",
      message: {
        id: "m",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: [],
        stop_reason: null,
        usage: { input_tokens: 5, output_tokens: 0 },
      },
    } satisfies MessageStreamEvent;
    const skipping = scriptedModel([
      {
        events: [
          messageStart,
          { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "partial" } },
          { type: "message_hologram" } as never,
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " answer" } },
          { type: "content_block_stop", index: 0 },
          {
            type: "message_delta",
            delta: { stop_reason: "end_turn", stop_sequence: null },
            usage: { output_tokens: 3 },
          },
          { type: "message_stop" },
        ],
      },
    ]);
    const store = memoryEventStore();
    const done = await createAgent({ model: skipping, tools: [], store }).run("Hi");
    expect(done.status, done.error).toBe("completed");
    expect(done.answer).toBe("partial answer");
    const log = await store.read(done.runId);
    expect(log.find((event) => event.type === "model-response")).toMatchObject({
      skipped: [{ kind: "event", type: "message_hologram" }],
    });

    const unreadable = scriptedModel([
      {
        events: [
          messageStart,
          {
            type: "content_block_start",
            index: 0,
            content_block: { type: "tool_use", id: "toolu_1", name: "refund", input: {} },
          },
          { type: "content_block_delta", index: 0, delta: { type: "input_patch_delta" } as never },
        ],
      },
    ]);
    const failedStore = memoryEventStore();
    const failed = await createAgent({ model: unreadable, tools: [], store: failedStore }).run(
      "Hi",
    );
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(/\[core\].*unknown type "input_patch_delta" for the tool call/);
    const failedLog = await failedStore.read(failed.runId);
    expect(failedLog.some((event) => event.type === "model-response")).toBe(false);
  });

  it("tokenises and redacts deltas before the host sees them, even a value split across two deltas", async () => {
    const vault = {
      tokenize: (text: string) => text.replace(/[\w.]+@[\w-]+\.\w+/g, "<EMAIL_1>"),
      reveal: <T>(value: T) =>
        JSON.parse(JSON.stringify(value).replaceAll("<EMAIL_1>", "jane.doe@example.com")) as T,
    };
    const redact = (value: unknown) =>
      JSON.parse(JSON.stringify(value).replace(/sk-ant-[\w-]{10,}/g, "[SECRET]"));
    const text = `Write to jane.doe@example.com about key sk-ant-api03-abcdefghijklmnop please. ${"Thanks for waiting. ".repeat(6)}`;
    for (const chunkChars of [1, 3, 7, 20]) {
      const model = scriptedModel([{ content: text }], { chunkChars });
      const events = await collect(createAgent({ model, tools: [], vault, redact }).stream("Hi"));
      const streamed = texts(events);
      expect(streamed).not.toContain("jane.doe");
      expect(streamed).not.toContain("sk-ant-api03");
      expect(streamed).toBe(redact(vault.tokenize(text)));
    }
  });

  it("works with the real SDK against the loopback server: a mid-stream overloaded_error resets the step", async () => {
    server = await messagesApiServer({
      replies: [
        {
          type: "message",
          message: { content: answer },
          stream: { errorAfterEvents: 6, chunkChars: 6 },
        },
        { type: "message", message: { content: answer }, stream: { chunkChars: 6 } },
      ],
    });
    const model = claudeModel({
      baseURL: server.url,
      apiKey: "sk-ant-test-key",
      model: "claude-sonnet-5-5",
    });
    const stream = createAgent({ model, tools: [], retry: { baseDelayMs: 1 } }).stream("Hi");
    const events = await collect(stream);
    expect((await stream.result).answer).toBe(answer);
    expect(events.filter((event) => event.type === "stream-reset")).toHaveLength(1);
    expect(shown(events)).toBe(answer);
  });
});

describe("thinking blocks", () => {
  const signature =
    "EqQBCkgIBxABGAIiQL9vF3pQ2c1nY8kJ0mW4xT7aR5sH6dE2fG9hJ1kL3mN5oP7qR9sT1uV3wX5yZ7aB9c==";
  const thinkingText =
    "The customer jane.doe@example.com mentioned key sk-ant-api03-abcdefghijklmnop; check A1001.";
  const thinking: ContentBlock = { type: "thinking", thinking: thinkingText, signature };
  const redacted: ContentBlock = {
    type: "redacted_thinking",
    data: "EmwKAhgBEgy3va3pzix/LafPsn4a",
  };
  const vault = {
    tokenize: (text: string) => text.replace(/[\w.]+@[\w-]+\.\w+/g, "<EMAIL_1>"),
    reveal: <T>(value: T) => value,
  };
  const redact = (value: unknown) =>
    JSON.parse(JSON.stringify(value).replace(/sk-ant-[\w-]{10,}/g, "[SECRET]"));

  it("survive the vault, redaction, the log and resume byte for byte, and reach the host only when opted in, redacted", async () => {
    const first = [thinking, redacted, use("toolu_1")];
    const replies = [{ content: first }, { content: answer }];
    const store = memoryEventStore();
    const model = scriptedModel(replies, { chunkChars: 7 });
    const agent = createAgent({ model, tools: [lookup], store, vault, redact });
    const hidden = await collect(agent.stream("Where is A1001?"));
    expect(hidden.some((event) => event.type === "thinking-delta")).toBe(false);
    // The next request carries the blocks exactly as the model sent them.
    const exact = JSON.stringify(first);
    expect(JSON.stringify(model.requests[1]!.messages[1]!.content)).toBe(exact);
    const runId = (hidden.at(-1) as { runId: string }).runId;
    const log = await store.read(runId);
    const response = log.find((event) => event.type === "model-response");
    expect(JSON.stringify((response as { response: { content: unknown } }).response.content)).toBe(
      exact,
    );

    // Resume from a log cut right after the first response: the request rebuilt from the log is the same.
    const cut = log.findIndex((event) => event.type === "model-response") + 1;
    const resumedStore = memoryEventStore();
    await resumedStore.append(
      runId,
      log.slice(0, cut).map(({ seq: _seq, ...event }) => event) as never,
      { expectedSeq: 0 },
    );
    const again = scriptedModel([{ content: answer }]);
    const resumed = await createAgent({
      model: again,
      tools: [lookup],
      store: resumedStore,
      vault,
      redact,
    }).resume(runId);
    expect(resumed.status).toBe("completed");
    expect(JSON.stringify(again.requests[0]!.messages[1]!.content)).toBe(exact);

    // Opted in: thinking deltas are shown, tokenised and redacted.
    const opted = scriptedModel(replies, { chunkChars: 7 });
    const shownEvents = await collect(
      createAgent({ model: opted, tools: [lookup], vault, redact }).stream("Where is A1001?", {
        thinking: true,
      }),
    );
    const thought = shownEvents
      .flatMap((event) => (event.type === "thinking-delta" ? [event.thinking] : []))
      .join("");
    expect(thought).toBe(redact(vault.tokenize(thinkingText)));
    expect(JSON.stringify(opted.requests[1]!.messages[1]!.content)).toBe(exact);
  });
});

describe("agent.resumeStream", () => {
  it("streams a parked run as it continues after approve(..., { resume: false }), without replaying the log", async () => {
    const askAll = {
      name: "policy",
      step: "2" as const,
      check: () => ({
        type: "ask" as const,
        reason: "refund_review",
        message: "A person must approve lookups.",
      }),
    };
    const store = memoryEventStore();
    const model = scriptedModel([{ content: [use("toolu_1")] }, { content: answer }], {
      chunkChars: 6,
    });
    const agent = createAgent({
      model,
      tools: [lookup],
      store,
      gates: [askAll],
      approval: { durable: true },
    });
    const first = agent.stream("Where is A1001?");
    const before = await collect(first);
    const parked = await first.result;
    expect(parked.status).toBe("awaiting_approval");
    expect(before.find((event) => event.type === "decision")).toMatchObject({
      decision: "asked",
      reason: "refund_review",
    });
    expect(before.at(-1)).toMatchObject({ type: "run-end", status: "awaiting_approval" });

    await agent.approve(
      parked.runId,
      { decision: "approve", approver: "ops@acme" },
      { resume: false },
    );
    const resumed = agent.resumeStream(parked.runId);
    const after = await collect(resumed);
    expect((await resumed.result).status).toBe("completed");
    expect(texts(after)).toBe(answer);
    expect(after.map((event) => event.type).filter((type) => type !== "text-delta")).toEqual([
      "decision",
      "tool-result",
      "step-end",
      "run-end",
    ]);
    // An ended run streams only its run-end.
    const again = await collect(agent.resumeStream(parked.runId));
    expect(again).toEqual([
      expect.objectContaining({ type: "run-end", status: "completed", answer }),
    ]);
  });

  it("a stream whose store cannot record the run-start resolves failed, like run()", async () => {
    const broken = {
      ...memoryEventStore(),
      name: "broken",
      append: async () => Promise.reject(new Error("disk full")),
    };
    const stream = createAgent({
      model: scriptedModel([{ content: answer }]),
      tools: [],
      store: broken,
    }).stream("Hi");
    const events = await collect(stream);
    const result = await stream.result;
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/disk full/);
    expect(events).toEqual([]);
  });
});

describe("agent.stream and the host", () => {
  it("a host that aborts mid-answer stops the run (cancelled); nothing more is streamed", async () => {
    const model = scriptedModel([{ content: answer.repeat(4), eventDelayMs: 5 }], {
      chunkChars: 4,
    });
    const controller = new AbortController();
    const stream = createAgent({ model, tools: [] }).stream("Hi", { signal: controller.signal });
    const events: AgentStreamEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === "text-delta" && events.length === 3) controller.abort();
    }
    const result = await stream.result;
    expect(result.status).toBe("stopped");
    expect(result.why).toBe("cancelled");
    expect(texts(events).length).toBeLessThan(answer.length);
    expect(events.at(-1)).toMatchObject({ type: "run-end", status: "stopped" });
  });

  it("a host that stops reading early does not stop the run: result still resolves", async () => {
    const model = scriptedModel([{ content: [use("toolu_1")] }, { content: answer }], {
      chunkChars: 3,
    });
    const stream = createAgent({ model, tools: [lookup] }).stream("Where is A1001?");
    for await (const event of stream) if (event.type === "tool-call") break;
    const result = await stream.result;
    expect(result.status).toBe("completed");
    expect(result.answer).toBe(answer);
  });
});
