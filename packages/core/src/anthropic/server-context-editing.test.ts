import Anthropic from "@anthropic-ai/sdk";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, StoredEvent } from "../index.js";
import { createAgent, tool } from "../index.js";
import {
  loopbackClearedPlaceholder,
  loopbackTokenCount,
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  type ReceivedRequest,
  recordingExporter,
  type ScriptedReply,
  scriptedModel,
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

const pages =
  (steps: number) =>
  (received: ReceivedRequest): ScriptedReply => {
    const next = lastCall(received.body as ModelRequest) + 1;
    if (next > steps) return { content: "done" };
    return {
      content: [{ type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } }],
    };
  };

const servers: MessagesApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: Parameters<typeof messagesApiServer>[0]) {
  const server = await messagesApiServer(options);
  servers.push(server);
  return server;
}

const ofType = <T extends StoredEvent["type"]>(events: StoredEvent[], type: T) =>
  events.filter((event): event is Extract<StoredEvent, { type: T }> => event.type === type);

/** A conversation of `uses` tool calls with 20 KB results, ending on a user turn. */
function toolConversation(uses: number) {
  const messages: Anthropic.Beta.BetaMessageParam[] = [{ role: "user", content: "Read it all" }];
  for (let n = 1; n <= uses; n += 1) {
    messages.push({
      role: "assistant",
      content: [{ type: "tool_use", id: `call_${n}`, name: "fetch_page", input: { n } }],
    });
    messages.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: `call_${n}`, content: page(n) }],
    });
  }
  return messages;
}

describe("server-side context editing on the loopback API (real SDK)", () => {
  it("clears old tool results past the trigger, keeps the last `keep`, and says so in applied_edits", async () => {
    const server = await serve({ handler: () => ({ content: "ok" }) });
    const client = new Anthropic({ baseURL: server.url, apiKey: fakeKey, maxRetries: 0 });
    const messages = toolConversation(6);
    const full = loopbackTokenCount({ messages });
    const body = {
      model: "claude-sonnet-5-5",
      max_tokens: 64,
      messages,
      betas: ["context-management-2025-06-27"],
      context_management: {
        edits: [
          {
            type: "clear_tool_uses_20250919" as const,
            trigger: { type: "input_tokens" as const, value: 10_000 },
            keep: { type: "tool_uses" as const, value: 2 },
          },
        ],
      },
    };
    const reply = await client.beta.messages.create(body);
    const applied = reply.context_management?.applied_edits ?? [];
    expect(applied).toHaveLength(1);
    expect(applied[0]).toMatchObject({ type: "clear_tool_uses_20250919", cleared_tool_uses: 4 });
    const cleared = applied[0]!.cleared_input_tokens;
    // The model read the prompt without the cleared tokens, and was billed for that.
    const usage = reply.usage;
    expect(
      usage.input_tokens +
        (usage.cache_creation_input_tokens ?? 0) +
        (usage.cache_read_input_tokens ?? 0),
    ).toBe(full - cleared);
    expect(cleared).toBeGreaterThan(4 * 4_000);
    const seen = (server.requests[0]!.prompt as { messages: Anthropic.Beta.BetaMessageParam[] })
      .messages;
    const results = seen.flatMap((message) =>
      Array.isArray(message.content)
        ? message.content.filter((block) => block.type === "tool_result")
        : [],
    ) as Anthropic.Beta.BetaToolResultBlockParam[];
    expect(results.map((block) => block.content === loopbackClearedPlaceholder)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
    // Streamed, the same report comes on message_delta and the SDK's stream carries it.
    const stream = await client.beta.messages.create({ ...body, stream: true });
    let streamed: unknown;
    for await (const event of stream)
      if (event.type === "message_delta") streamed = event.context_management;
    expect(streamed).toEqual({ applied_edits: applied });
    // Under the trigger nothing is cleared and applied_edits is empty.
    const small = await client.beta.messages.create({
      ...body,
      messages: toolConversation(1),
    });
    expect(small.context_management).toEqual({ applied_edits: [] });
  });

  it("rejects an unknown edit type, and context_management without the beta, with the API's 400", async () => {
    const server = await serve({ handler: () => ({ content: "ok" }) });
    const client = new Anthropic({ baseURL: server.url, apiKey: fakeKey, maxRetries: 0 });
    const unknown = await client.beta.messages
      .create({
        model: "claude-sonnet-5-5",
        max_tokens: 64,
        messages: toolConversation(1),
        betas: ["context-management-2025-06-27"],
        context_management: { edits: [{ type: "clear_everything_2099" } as never] },
      })
      .catch((caught: unknown) => caught);
    expect(unknown).toBeInstanceOf(Anthropic.BadRequestError);
    expect((unknown as InstanceType<typeof Anthropic.BadRequestError>).error).toEqual({
      type: "error",
      error: {
        type: "invalid_request_error",
        message:
          "context_management.edits.0: Input tag 'clear_everything_2099' found using 'type' does not match any of the expected tags: 'clear_tool_uses_20250919', 'clear_thinking_20251015', 'compact_20260112'",
      },
    });
    const noBeta = await client.messages
      .create({
        model: "claude-sonnet-5-5",
        max_tokens: 64,
        messages: [{ role: "user", content: "hi" }],
        context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
      } as never)
      .catch((caught: unknown) => caught);
    expect(noBeta).toBeInstanceOf(Anthropic.BadRequestError);
    expect((noBeta as Error).message).toMatch(/context_management: Extra inputs are not permitted/);
    expect(server.calls).toBe(0);
  });
});

describe("clearToolResults where: server (claudeModel, loopback API with a 60k limit)", () => {
  const limit = 60_000;

  it("a 60-step run with 20 KB results stays under the enforced limit while the requests carry every result; the log records the server's edits", async () => {
    const server = await serve({ handler: pages(60), contextLimit: limit });
    const store = memoryEventStore();
    const model = claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" });
    expect(model.serverContextEdits).toEqual(["clear_tool_uses_20250919"]);
    const agent = createAgent({
      model,
      tools: [fetchPage],
      store,
      contextWindow: {
        maxInputTokens: limit,
        clearToolResults: { keepLast: 3, atFraction: 0.5, where: "server" },
      },
    });
    const result = await agent.run("Read the whole report", { runId: "run_server" });
    expect(result.error ?? result.status).toBe("completed");
    expect(server.refusedTooLong).toBe(0);
    const calls = server.requests.filter((request) => request.path === "/v1/messages");
    expect(calls).toHaveLength(61);
    for (const request of calls) {
      expect(request.headers["anthropic-beta"]).toContain("context-management-2025-06-27");
      expect(request.body.context_management).toEqual({
        edits: [
          {
            type: "clear_tool_uses_20250919",
            trigger: { type: "input_tokens", value: 30_000 },
            keep: { type: "tool_uses", value: 3 },
          },
        ],
      });
      expect(loopbackTokenCount(request.prompt)).toBeLessThanOrEqual(limit);
    }
    // The last request carried all 60 results (about 300k tokens): only the server's edit fit it.
    expect(loopbackTokenCount(calls.at(-1)!.body)).toBeGreaterThan(5 * limit);
    expect(JSON.stringify(calls.at(-1)!.body)).not.toContain("[tool result cleared");
    const events = await store.read("run_server");
    const edits = ofType(events, "context-edited");
    expect(edits.length).toBeGreaterThan(0);
    // One event per request the server edited, with the counts it reported, after its response.
    const editedCalls = calls.filter((request) => (request.appliedEdits ?? []).length > 0);
    expect(edits).toHaveLength(editedCalls.length);
    for (const [index, event] of edits.entries()) {
      const applied = editedCalls[index]!.appliedEdits![0]!;
      expect(event).toMatchObject({
        source: "server",
        cleared: [],
        server: {
          type: "clear_tool_uses_20250919",
          clearedToolUses: applied.cleared_tool_uses,
          clearedInputTokens: applied.cleared_input_tokens,
        },
      });
      expect(event.tokensBefore - event.tokensAfter).toBe(applied.cleared_input_tokens);
      const before = events[events.indexOf(event) - 1]!;
      expect(before).toMatchObject({ type: "model-response", step: event.step });
    }
    // No client edit was needed: the estimate followed the server's counts.
    expect(edits.every((event) => event.source === "server")).toBe(true);
  });

  it("a run crashed right after a server edit is logged resumes to the same request bytes", async () => {
    const options = {
      tools: [fetchPage],
      contextWindow: {
        maxInputTokens: limit,
        clearToolResults: { keepLast: 3, atFraction: 0.5, where: "server" as const },
      },
    };
    const model = (server: MessagesApiServer) =>
      claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" });
    const reference = await serve({ handler: pages(20), contextLimit: limit });
    const whole = await createAgent({
      ...options,
      model: model(reference),
      store: memoryEventStore(),
    }).run("Read the whole report", { runId: "run_same" });
    expect(whole.error ?? whole.status).toBe("completed");
    const crashing = await serve({ handler: pages(20), contextLimit: limit });
    const durable = memoryEventStore();
    let crashed = false;
    const dying: EventStore = {
      ...durable,
      name: "dying",
      async append(runId, events, appendOptions) {
        if (crashed) throw new Error("the process is gone");
        const appended = await durable.append(runId, events, appendOptions);
        if (events.some((event) => event.type === "context-edited")) {
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
    const calls = () => crashing.requests.filter((request) => request.path === "/v1/messages");
    const before = calls().length;
    expect((await durable.read("run_same")).at(-1)).toMatchObject({
      type: "context-edited",
      source: "server",
    });
    const resumed = await createAgent({
      ...options,
      model: model(crashing),
      store: durable,
    }).resume("run_same");
    expect(resumed.error ?? resumed.status).toBe("completed");
    const after = calls()
      .slice(before)
      .map((request) => request.rawBody);
    const expected = reference.requests
      .filter((request) => request.path === "/v1/messages")
      .slice(before)
      .map((request) => request.rawBody);
    expect(after.length).toBeGreaterThan(0);
    expect(after).toEqual(expected);
  });

  it("a compaction call under server-side clearing carries the same edit to a summariser that supports it", async () => {
    const scripted = scriptedModel(
      (request) => {
        if (request.tool_choice?.type === "none") return { content: "Read some pages." };
        const next = lastCall(request) + 1;
        if (next > 12) return { content: "done" };
        return {
          content: [
            { type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } },
          ],
        };
      },
      { contextWindow: limit },
    );
    // A model that takes the edit (this scripted one does not apply it: the loop's estimate
    // stays on the whole conversation, so compaction runs).
    const model = { ...scripted, serverContextEdits: ["clear_tool_uses_20250919"] };
    const agent = createAgent({
      model,
      tools: [fetchPage],
      store: memoryEventStore(),
      contextWindow: {
        clearToolResults: { keepLast: 3, atFraction: 0.5, where: "server" },
        compact: { atFraction: 0.6 },
      },
    });
    const result = await agent.run("Read the whole report");
    expect(result.error ?? result.status).toBe("completed");
    const compactions = scripted.requests.filter((request) => request.tool_choice?.type === "none");
    expect(compactions.length).toBeGreaterThan(0);
    for (const request of scripted.requests)
      expect(request.context_management?.edits[0]).toMatchObject({
        type: "clear_tool_uses_20250919",
        keep: { type: "tool_uses", value: 3 },
      });
  });

  it("streams each server edit as context-edited (source server) and shows it on the run span", async () => {
    const server = await serve({ handler: pages(12), contextLimit: 30_000 });
    const exporter = recordingExporter();
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [fetchPage],
      store: memoryEventStore(),
      exporters: [exporter],
      contextWindow: {
        maxInputTokens: 30_000,
        clearToolResults: { keepLast: 2, atFraction: 0.5, where: "server" },
      },
    });
    const stream = agent.stream("Read the report");
    const streamed: { source: string; clearedToolUses: number; cleared: string[] }[] = [];
    for await (const event of stream) if (event.type === "context-edited") streamed.push(event);
    expect((await stream.result).error ?? (await stream.result).status).toBe("completed");
    const applied = server.requests.flatMap((request) => request.appliedEdits ?? []);
    expect(streamed.length).toBe(applied.length);
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.map((event) => event.clearedToolUses)).toEqual(
      applied.map((entry) => entry.cleared_tool_uses),
    );
    expect(streamed.every((event) => event.source === "server" && event.cleared.length === 0)).toBe(
      true,
    );
    await agent.shutdown();
    const run = exporter.spans.find((span) => span.kind === "run")!;
    const marks = run.events.filter((event) => event.name === "context.edited");
    expect(marks).toHaveLength(applied.length);
    expect(marks[0]!.attributes).toMatchObject({
      "loopguard.context.source": "server",
      "loopguard.context.cleared": applied[0]!.cleared_tool_uses,
    });
  });

  it("a model without server-side editing gets the client edit (stubs in the log and the requests)", async () => {
    const server = await serve({ handler: pages(30), contextLimit: limit });
    const store = memoryEventStore();
    const model = claudeModel({
      baseURL: server.url,
      apiKey: fakeKey,
      model: "claude-sonnet-5-5",
      serverContextEdits: false,
    });
    expect(model.serverContextEdits).toBeUndefined();
    const agent = createAgent({
      model,
      tools: [fetchPage],
      store,
      contextWindow: {
        maxInputTokens: limit,
        clearToolResults: { keepLast: 3, atFraction: 0.5, where: "server" },
      },
    });
    const result = await agent.run("Read the whole report", { runId: "run_client" });
    expect(result.error ?? result.status).toBe("completed");
    expect(server.refusedTooLong).toBe(0);
    const calls = server.requests.filter((request) => request.path === "/v1/messages");
    for (const request of calls) {
      expect(request.body.context_management).toBeUndefined();
      expect(request.headers["anthropic-beta"] ?? "").not.toContain("context-management");
      expect(loopbackTokenCount(request.body)).toBeLessThanOrEqual(limit);
    }
    expect(JSON.stringify(calls.at(-1)!.body)).toContain("[tool result cleared");
    const edits = ofType(await store.read("run_client"), "context-edited");
    expect(edits.length).toBeGreaterThan(0);
    expect(edits.every((event) => event.source === undefined && event.cleared.length > 0)).toBe(
      true,
    );
  });

  it("claudeModel refuses edits it was told the backend cannot take, and checks the option", () => {
    const model = claudeModel({ apiKey: fakeKey, serverContextEdits: false });
    expect(() =>
      model.body({
        model: "claude-sonnet-5-5",
        max_tokens: 64,
        messages: [{ role: "user", content: "hi" }],
        context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
      }),
    ).toThrow(/\[core\] claudeModel: the request has context_management/);
    expect(() => claudeModel({ serverContextEdits: "yes" as never })).toThrow(
      /\[core\] claudeModel: serverContextEdits must be true or false/,
    );
    // With the default, the body carries the edits as given.
    const body = claudeModel({ apiKey: fakeKey }).body({
      model: "claude-sonnet-5-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "hi" }],
      context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
    });
    expect(body.context_management).toEqual({ edits: [{ type: "clear_tool_uses_20250919" }] });
  });

  it("rejects a where that is neither client nor server", () => {
    expect(() =>
      createAgent({
        model: scriptedModel([{ content: "hi" }]),
        tools: [],
        contextWindow: {
          maxInputTokens: limit,
          clearToolResults: { keepLast: 3, atFraction: 0.5, where: "both" as never },
        },
      }),
    ).toThrow(/\[core\] createAgent: contextWindow.clearToolResults.where must be "client"/);
  });
});

describe("nothing to compact", () => {
  it("is logged once, not every step, while no turn is old enough to summarise", async () => {
    const model = scriptedModel(
      (request) => {
        const next = lastCall(request) + 1;
        if (next > 8) return { content: "done" };
        return {
          content: [
            { type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } },
          ],
        };
      },
      { contextWindow: 200_000 },
    );
    const store = memoryEventStore();
    const agent = createAgent({
      model,
      tools: [fetchPage],
      store,
      // Past the threshold from the second step; 20 kept turns leave nothing old enough.
      contextWindow: { compact: { atFraction: 0.02, keepTurns: 20 } },
    });
    const result = await agent.run("Read the whole report", { runId: "run_nothing" });
    expect(result.error ?? result.status).toBe("completed");
    expect(result.steps).toBe(9);
    const failures = ofType(await store.read("run_nothing"), "context-compaction-failed");
    expect(failures.map((event) => event.reason)).toEqual(["nothing_to_compact"]);
  });

  it("tries again once a turn is old enough: failures and compactions alternate, never two failures in a row", async () => {
    const model = scriptedModel(
      (request) => {
        if (request.tool_choice?.type === "none") return { content: "Read some pages." };
        const next = lastCall(request) + 1;
        if (next > 14) return { content: "done" };
        return {
          content: [
            { type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } },
          ],
        };
      },
      { contextWindow: 200_000 },
    );
    const store = memoryEventStore();
    const agent = createAgent({
      model,
      tools: [fetchPage],
      store,
      contextWindow: { compact: { atFraction: 0.02, keepTurns: 3 } },
    });
    const result = await agent.run("Read the whole report", { runId: "run_alternate" });
    expect(result.error ?? result.status).toBe("completed");
    const outcomes = (await store.read("run_alternate"))
      .filter(
        (event) => event.type === "context-compacted" || event.type === "context-compaction-failed",
      )
      .map((event) => event.type);
    expect(outcomes).toContain("context-compacted");
    expect(outcomes).toContain("context-compaction-failed");
    expect(outcomes.join(" ")).not.toMatch(/context-compaction-failed context-compaction-failed/);
  });
});
