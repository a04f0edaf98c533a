import {
  createAgent,
  type EventStore,
  type Gate,
  type RunView,
  type StoredEventInput,
  tool,
} from "@loopguard/core";
import { memoryEventStore, toolCallsModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { policy } from "./policy.js";
import { argDomainNotIn } from "./predicate.js";
import { replayRuns, replayStateAt } from "./replay-runs.js";
import { allow, deny } from "./rule.js";

const sendEmail = tool({
  name: "send_email",
  description: "Send an email.",
  input: v.object({ to: v.string(), body: v.string() }),
  run: async () => "sent",
});
const lookupOrder = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: async () => "shipped",
});

/** A model that makes the given calls one per turn, then answers. */
const scripted = toolCallsModel;

async function recordRuns(store: EventStore) {
  // Run 1: two emails, one outside the company (the live policy allowed both).
  await createAgent({
    model: scripted([
      { name: "send_email", input: { to: "ann@acme-shop.com", body: "hi" } },
      { name: "send_email", input: { to: "x@evil.example", body: "data" } },
      { name: "lookup_order", input: { order_id: "A1" } },
    ]),
    tools: [sendEmail, lookupOrder],
    store,
    gates: [policy([allow("*")])],
  }).run("Email the customer");
  // Run 2: the live policy denied every lookup.
  await createAgent({
    model: scripted([{ name: "lookup_order", input: { order_id: "A2" } }]),
    tools: [sendEmail, lookupOrder],
    store,
    gates: [policy([deny("lookup_order")])],
  }).run("Where is A2?");
}

const candidate = {
  version: 1,
  default: "allow",
  rules: [
    { effect: "deny", tool: "send_email", when: { arg: "to", domainNotIn: ["acme-shop.com"] } },
    { effect: "ask", tool: "lookup_order", when: { arg: "order_id", in: ["A1"] } },
  ],
};

describe("replayRuns", () => {
  it("re-judges every recorded call and reports the changed decisions", async () => {
    const store = memoryEventStore();
    await recordRuns(store);
    const report = await replayRuns({ policy: candidate, store });
    expect(report.runs).toBe(2);
    expect(report.calls).toBe(4);
    expect(report.allowedToDenied).toBe(1);
    expect(report.deniedToAllowed).toBe(1);
    expect(report.toAsk).toBe(1);
    expect(report.unchanged).toBe(1);
    expect(report.changes.map((change) => [change.tool, change.change])).toEqual([
      ["send_email", "allowed_to_denied"],
      ["lookup_order", "to_ask"],
      ["lookup_order", "denied_to_allowed"],
    ]);
    expect(report.changes[0]).toMatchObject({
      before: { outcome: "allow" },
      after: { outcome: "deny", reason: "policy_deny", step: "2:policy" },
    });
    expect(report.changes[2]!.before).toMatchObject({ outcome: "deny", refusedAt: "2:policy" });
  });

  it("the same policy as the live one changes nothing", async () => {
    const store = memoryEventStore();
    await createAgent({
      model: scripted([
        { name: "send_email", input: { to: "x@evil.example", body: "data" } },
        { name: "send_email", input: { to: "ann@acme-shop.com", body: "hi" } },
      ]),
      tools: [sendEmail],
      store,
      gates: [policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })])],
    }).run("Email");
    const report = await replayRuns({
      policy: {
        version: 1,
        default: "allow",
        rules: [
          {
            effect: "deny",
            tool: "send_email",
            when: { arg: "to", domainNotIn: ["acme-shop.com"] },
          },
        ],
      },
      store,
    });
    expect(report).toMatchObject({ calls: 2, unchanged: 2, changes: [] });
  });

  it("judges rate limits at the recorded times, across runs in time order", async () => {
    const store = memoryEventStore();
    // Three runs, one email each, at t = 0 s, 1 s and 120 s.
    for (const [index, at] of [0, 1_000, 120_000].entries())
      await store.append(`r${index}`, syntheticRun(`r${index}`, at, "ann@acme-shop.com"), {
        expectedSeq: 0,
      });
    const report = await replayRuns({
      policy: {
        version: 1,
        default: "allow",
        rules: [],
        rateLimits: [{ tool: "send_email", capacity: 1, refillPerSecond: 1 / 60 }],
      },
      store,
    });
    // The second email came 1 s after the first: over one per minute. The third, 2 minutes on, is fine.
    expect(report.changes.map((change) => [change.runId, change.after.reason])).toEqual([
      ["r1", "rate_limited"],
    ]);
  });

  it("only runs since a date; a corrupt log is reported and skipped", async () => {
    const store = memoryEventStore();
    await store.append("old", syntheticRun("old", Date.parse("2026-01-01"), "x@evil.example"), {
      expectedSeq: 0,
    });
    await store.append("new", syntheticRun("new", Date.parse("2026-06-01"), "x@evil.example"), {
      expectedSeq: 0,
    });
    const broken: EventStore = {
      name: "broken",
      append: store.append,
      list: async (filter) => [
        ...(await store.list(filter)),
        {
          runId: "bad",
          status: "unreadable",
          steps: 0,
          costUsd: 0,
          events: 0,
          createdAt: 0,
          updatedAt: Date.parse("2026-07-01"),
          error: "line 3 is not JSON",
        },
        {
          runId: "throws",
          status: "completed",
          steps: 0,
          costUsd: 0,
          events: 0,
          createdAt: 0,
          updatedAt: Date.parse("2026-07-01"),
        },
      ],
      read: async (runId) => {
        if (runId === "throws") throw new Error("[checkpoint] run throws: line 2 is cut off");
        return store.read(runId);
      },
    };
    const skipped: string[] = [];
    const report = await replayRuns({
      policy: candidate,
      store: broken,
      since: "2026-03-01",
      onSkip: (runId) => skipped.push(runId),
    });
    expect(report.runs).toBe(1);
    expect(report.changes.map((change) => change.runId)).toEqual(["new"]);
    expect(report.skippedRuns).toEqual([
      { runId: "bad", error: "line 3 is not JSON" },
      { runId: "throws", error: "[checkpoint] run throws: line 2 is cut off" },
    ]);
    expect(skipped).toEqual(["bad", "throws"]);
  });

  it("a candidate that does not load throws the loader's error; bad options are named", async () => {
    const store = memoryEventStore();
    await expect(
      replayRuns({ policy: '{"version":1,"default":"allow","rules":[{"effect":"nope"}]}', store }),
    ).rejects.toThrow(/\[policy\] rules\[0\]\.effect/);
    await expect(replayRuns({ policy: candidate, store: {} as never })).rejects.toThrow(
      /\[policy\] replayRuns\(\{ store \}\): store must be an EventStore/,
    );
    await expect(replayRuns({ policy: candidate, store, since: "yesterday-ish" })).rejects.toThrow(
      /since must be a Date/,
    );
  });
});

/** A one-call run written straight to a store, with chosen timestamps. */
function syntheticRun(runId: string, at: number, to: string): StoredEventInput[] {
  const args = { to, body: "hello" };
  return [
    {
      type: "run-start",
      runId,
      agentId: "desk",
      task: "Email",
      model: "scripted",
      maxTokens: 1024,
      budget: {},
      policyDigest: "live",
      toolDigest: "tools",
      at,
    },
    { type: "model-request", step: 1, maxTokens: 1024, estimateUsd: 0, requestDigest: "r", at },
    {
      type: "model-response",
      step: 1,
      response: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "scripted",
        content: [{ type: "tool_use", id: "toolu_1", name: "send_email", input: args }],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 10 },
      } as never,
      costUsd: 0,
      latencyMs: 1,
      attempts: 1,
      at,
    },
    {
      type: "tool-call-intent",
      step: 1,
      toolUseId: "toolu_1",
      tool: "send_email",
      args,
      argsDigest: "d",
      idempotencyKey: `${runId}:toolu_1`,
      decision: { outcome: "allow", passed: ["2:policy"] },
      at,
    },
    {
      type: "tool-call-result",
      step: 1,
      toolUseId: "toolu_1",
      tool: "send_email",
      status: "ok",
      content: "sent",
      isError: false,
      durationMs: 1,
      attempts: 1,
      at,
    },
    { type: "run-end", status: "completed", answer: "done", why: "end_turn", at },
  ];
}

describe("replay folds a run as the live loop did", () => {
  it("gives every re-judged call the same run view its gates saw live (calls, refusals, outputs, trust, scans, spend)", async () => {
    const store = memoryEventStore();
    const seenLive: string[] = [];
    const snapshot = (run: RunView) =>
      JSON.stringify({
        calls: run.calls,
        refusals: run.refusals,
        outputs: run.outputs,
        spend: run.spend,
      });
    const trustedLookup = tool({
      name: "lookup_order",
      description: "Look up an order.",
      input: v.object({ order_id: v.string() }),
      trust: "trusted",
      run: async ({ order_id }) => `Order ${order_id}: shipped to ann@acme-shop.com`,
    });
    const recorder: Gate = {
      name: "recorder",
      step: "2",
      check(call) {
        if (call.run) seenLive.push(snapshot(call.run));
        return { type: "allow" as const };
      },
    };
    const result = await createAgent({
      model: scripted([
        { name: "lookup_order", input: { order_id: "A1" } },
        { name: "send_email", input: { to: "x@evil.example", body: "data" } },
        { name: "send_email", input: { to: "ann@acme-shop.com", body: "hi" } },
        { name: "lookup_order", input: { order_id: "A2" } },
      ]),
      tools: [sendEmail, trustedLookup],
      store,
      gates: [
        recorder,
        policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }), allow("*")]),
      ],
    }).run("Look up A1 and email the customer");
    const events = await store.read(result.runId);
    const decided = events
      .map((event, index) => ({ event, index }))
      .filter(
        ({ event }) => event.type === "tool-call-intent" || event.type === "tool-call-refusal",
      );
    expect(decided).toHaveLength(4);
    expect(seenLive).toHaveLength(4);
    // The recorder runs first, so it saw every call, admitted or refused: replay's fold before
    // each decision must hold exactly what the live run held when that call was judged.
    decided.forEach(({ index }, call) => {
      expect(snapshot(replayStateAt(events, index)), `call ${call + 1}`).toBe(seenLive[call]);
    });
    // And the view is not empty: the check could fail.
    expect(JSON.parse(seenLive[3]!).outputs.length).toBeGreaterThan(0);
    expect(JSON.parse(seenLive[3]!).refusals.length).toBe(1);
  });
});
