import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, StoredEvent } from "../index.js";
import { createAgent, tool } from "../index.js";
import {
  loopbackTokenCount,
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  type ReceivedRequest,
  type ScriptedReply,
} from "../testing/index.js";
import { claudeModel } from "./index.js";

const fakeKey = "sk-ant-test-not-a-real-key";
const page = (n: number) =>
  `page ${n}: ${"lorem ipsum dolor sit amet ".repeat(760)}`.slice(0, 20_000);
const fetchPage = tool({
  name: "fetch_page",
  description: "Fetch a page of the report by its number.",
  input: v.object({ n: v.number() }),
  idempotent: true,
  run: async ({ n }) => page(n),
});

function lastCall(request: ModelRequest): number {
  for (let index = request.messages.length - 1; index >= 0; index -= 1) {
    const content = request.messages[index]!.content;
    if (typeof content === "string") continue;
    for (const block of content)
      if (block.type === "tool_use") return Number(block.id.replace("call_", ""));
  }
  return 0;
}

/** The model's side, as a loopback handler: fetch pages 1..steps, then answer; summarise when asked. */
const pages =
  (steps: number) =>
  (received: ReceivedRequest): ScriptedReply => {
    const request = received.body as ModelRequest;
    if (request.tool_choice?.type === "none")
      return { content: `Fetched pages 1 to ${lastCall(request)}; nothing found yet.` };
    const next = lastCall(request) + 1;
    if (next > steps) return { content: "done" };
    return {
      content: [{ type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } }],
    };
  };

const servers: MessagesApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(steps: number, contextLimit: number) {
  const server = await messagesApiServer({ handler: pages(steps), contextLimit });
  servers.push(server);
  return server;
}

const messagesCalls = (server: MessagesApiServer) =>
  server.requests.filter((request) => request.path === "/v1/messages");

describe("context window against the loopback API (real SDK, limit enforced)", () => {
  it("a 200-step run with 20 KB tool results completes under a 200k window, no request over it", async () => {
    const server = await serve(200, 200_000);
    const store = memoryEventStore();
    const agent = createAgent({
      model: claudeModel({
        baseURL: server.url,
        apiKey: fakeKey,
        model: "claude-sonnet-5-5",
        contextWindow: 200_000,
      }),
      tools: [fetchPage],
      system: "You read long reports page by page.",
      store,
      contextWindow: {
        clearToolResults: { keepLast: 5, atFraction: 0.5 },
        compact: { atFraction: 0.8 },
      },
    });
    const result = await agent.run("Read the whole report", { runId: "run_200" });
    expect(result.error ?? result.status).toBe("completed");
    expect(result.steps).toBe(201);
    expect(server.refusedTooLong).toBe(0);
    const calls = messagesCalls(server);
    for (const request of calls)
      expect(loopbackTokenCount(request.body)).toBeLessThanOrEqual(200_000);
    // Without management the conversation would have held about 1 000 000 tokens of results.
    const events = await store.read("run_200");
    expect(events.filter((event) => event.type === "context-edited").length).toBeGreaterThan(0);
    // The prompt cache still pays: most prompt tokens were read from the cache.
    let read = 0;
    let prompt = 0;
    for (const request of calls) {
      const usage = request.usage!;
      read += usage.cache_read_input_tokens ?? 0;
      prompt +=
        usage.input_tokens +
        (usage.cache_creation_input_tokens ?? 0) +
        (usage.cache_read_input_tokens ?? 0);
    }
    expect(read / prompt).toBeGreaterThan(0.5);
  });

  it("the same run without context management is refused by the API once the window is full", async () => {
    const server = await serve(60, 200_000);
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [fetchPage],
      store: memoryEventStore(),
    });
    const result = await agent.run("Read the whole report");
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/prompt is too long: \d+ tokens > 200000 maximum/);
    expect(server.refusedTooLong).toBe(1);
  });

  it("counts with count_tokens only near the window, and clears rather than send a request over it", async () => {
    const server = await serve(30, 60_000);
    const store = memoryEventStore();
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [fetchPage],
      store,
      // No strategy: only the guard against a request over the window.
      contextWindow: { maxInputTokens: 60_000 },
    });
    const result = await agent.run("Read the whole report", { runId: "run_guard" });
    expect(result.error ?? result.status).toBe("completed");
    expect(server.refusedTooLong).toBe(0);
    const counts = server.requests.filter(
      (request) => request.path === "/v1/messages/count_tokens",
    );
    expect(counts.length).toBeGreaterThan(0);
    // Far fewer counts than steps: only estimates within 5% of the window are counted.
    expect(counts.length).toBeLessThan(result.steps / 2);
    const events = await store.read("run_guard");
    const edits = events.filter(
      (event): event is Extract<StoredEvent, { type: "context-edited" }> =>
        event.type === "context-edited",
    );
    expect(edits.length).toBeGreaterThan(0);
    expect(edits[0]!.reason).toBe("over_limit");
    expect(edits[0]!.counted).toBe(true);
    expect(edits[0]!.tokensBefore).toBeGreaterThan(60_000);
  });

  it("a request the API refuses as too long (the estimate was wrong) is cleared and sent again", async () => {
    // The API's window is smaller than the one the agent was told.
    const server = await serve(24, 50_000);
    const store = memoryEventStore();
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [fetchPage],
      store,
      contextWindow: { maxInputTokens: 90_000 },
    });
    const result = await agent.run("Read the whole report", { runId: "run_refused" });
    expect(result.error ?? result.status).toBe("completed");
    expect(server.refusedTooLong).toBeGreaterThan(0);
    const events = await store.read("run_refused");
    const errors = events.filter((event) => event.type === "model-error");
    expect(errors).toHaveLength(server.refusedTooLong);
    for (const error of errors) {
      const next = events[events.indexOf(error) + 1]!;
      expect(next.type).toBe("context-edited");
      expect(next.type === "context-edited" && next.reason).toBe("over_limit");
    }
  });

  it("a run crashed right after a compaction resumes to the same next request bytes", async () => {
    const options = {
      tools: [fetchPage],
      system: "You read long reports page by page.",
      contextWindow: { maxInputTokens: 60_000, compact: { atFraction: 0.6 } },
    };
    const model = (server: MessagesApiServer) =>
      claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" });
    const reference = await serve(30, 60_000);
    const whole = await createAgent({
      ...options,
      model: model(reference),
      store: memoryEventStore(),
    }).run("Read the whole report", { runId: "run_same" });
    expect(whole.status).toBe("completed");
    // The compaction call reads the prefix the steps before it cached (same system, tools, turns).
    const compactions = messagesCalls(reference).filter(
      (request) => (request.body as ModelRequest).tool_choice?.type === "none",
    );
    expect(compactions.length).toBeGreaterThan(0);
    for (const request of compactions)
      expect(request.usage!.cache_read_input_tokens ?? 0).toBeGreaterThan(0);

    const crashing = await serve(30, 60_000);
    const durable = memoryEventStore();
    let crashed = false;
    // The process dies right after the compaction is durable.
    const dying: EventStore = {
      ...durable,
      name: "dying",
      async append(runId, events, appendOptions) {
        if (crashed) throw new Error("the process is gone");
        const appended = await durable.append(runId, events, appendOptions);
        if (events.some((event) => event.type === "context-compacted")) {
          crashed = true;
          throw new Error("the process died");
        }
        return appended;
      },
    };
    const first = await createAgent({ ...options, model: model(crashing), store: dying }).run(
      "Read the whole report",
      { runId: "run_same" },
    );
    expect(first.error).toMatch(/the process died/);
    expect(crashed).toBe(true);
    const before = messagesCalls(crashing).length;
    const log: StoredEvent[] = await durable.read("run_same");
    expect(log.at(-1)!.type).toBe("context-compacted");
    const resumed = await createAgent({
      ...options,
      model: model(crashing),
      store: durable,
    }).resume("run_same");
    expect(resumed.status).toBe("completed");
    const after = messagesCalls(crashing)
      .slice(before)
      .map((request) => request.rawBody);
    const expected = messagesCalls(reference)
      .slice(before)
      .map((request) => request.rawBody);
    expect(after.length).toBeGreaterThan(0);
    // Byte for byte: the next request, and every one after it.
    expect(after[0]).toBe(expected[0]);
    expect(after).toEqual(expected);
  });
});

describe("model windows", () => {
  it("claudeModel knows Claude's windows, takes one for others, and refuses a bad one", async () => {
    const { claudeContextWindow } = await import("./index.js");
    expect(claudeContextWindow("claude-sonnet-5-5")).toBe(1_000_000);
    expect(claudeContextWindow("claude-sonnet-5-5-20261001")).toBe(1_000_000);
    expect(claudeContextWindow("claude-haiku-4-5")).toBe(200_000);
    expect(claudeContextWindow("my-proxy-model[1m]")).toBe(1_000_000);
    expect(claudeContextWindow("claude-unknown-9")).toBeUndefined();
    expect(claudeModel({ model: "claude-sonnet-5-5", apiKey: fakeKey }).contextWindow).toBe(
      1_000_000,
    );
    expect(claudeModel({ model: "my-model", apiKey: fakeKey }).contextWindow).toBeUndefined();
    expect(
      claudeModel({ model: "my-model", apiKey: fakeKey, contextWindow: 64_000 }).contextWindow,
    ).toBe(64_000);
    expect(() => claudeModel({ apiKey: fakeKey, contextWindow: 0 })).toThrow(
      /\[core\] claudeModel: contextWindow must be a positive whole number/,
    );
    // An agent over a model with no known window must be told one.
    expect(() =>
      createAgent({
        model: claudeModel({ model: "my-model", apiKey: fakeKey }),
        tools: [fetchPage],
        store: memoryEventStore(),
        prices: {
          "my-model": {
            inputPerMTok: 1,
            outputPerMTok: 1,
            cacheWrite5mPerMTok: 1,
            cacheWrite1hPerMTok: 1,
            cacheReadPerMTok: 1,
          },
        },
        contextWindow: { compact: { atFraction: 0.8 } },
      }),
    ).toThrow(/model "my-model" does not report its context window/);
  });
});
