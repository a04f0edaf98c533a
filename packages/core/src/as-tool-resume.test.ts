import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { ContentBlock } from "./contracts/model.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

const childScript = [
  { content: [use("toolu_c1", "charge_card", { amount: 5 })], stop_reason: "tool_use" as const },
  { content: "Charged 5." },
];
const parentScript = [
  { content: [use("toolu_p1", "billing", { task: "Charge 5" })], stop_reason: "tool_use" as const },
  { content: "Billing says: charged 5." },
];

/** A parent that delegates to a billing agent whose one tool has a side effect. */
function tree(store: EventStore, answered: { parent: number; child: number }) {
  const effects: string[] = [];
  const charge = tool({
    name: "charge_card",
    description: "Charges the card",
    input: v.object({ amount: v.number() }),
    run: (args, context) => {
      effects.push(`charge ${args.amount} ${context.idempotencyKey}`);
      return "ok";
    },
  });
  const childModel = scriptedModel(childScript.slice(answered.child));
  const child = createAgent({ model: childModel, tools: [charge], agentId: "billing", store });
  const parentModel = scriptedModel(parentScript.slice(answered.parent));
  const parent = createAgent({
    model: parentModel,
    tools: [child.asTool({ name: "billing", description: "Handles billing" })],
    agentId: "lead",
    store,
    budget: { maxUsd: 1 },
  });
  return { parent, effects, childModel, parentModel };
}

/** A store that records the global order of appended events across runs. */
function recordingStore(): {
  store: EventStore;
  order: Array<{ runId: string; event: StoredEvent }>;
} {
  const inner = memoryEventStore();
  const order: Array<{ runId: string; event: StoredEvent }> = [];
  const store: EventStore = {
    ...inner,
    name: inner.name,
    read: (runId) => inner.read(runId),
    list: (filter) => inner.list(filter),
    async append(runId, events, options) {
      const result = await inner.append(runId, events, options);
      for (const [index, event] of events.entries())
        order.push({ runId, event: { ...event, seq: options.expectedSeq + index } as StoredEvent });
      return result;
    },
  };
  return { store, order };
}

describe("a tree of runs after a crash", () => {
  it("resumes the same child at every event boundary, and every side effect happens once", async () => {
    const { store, order } = recordingStore();
    const reference = await tree(store, { parent: 0, child: 0 }).parent.run("Charge the customer", {
      runId: "run_root",
    });
    expect(reference.status).toBe("completed");
    const childId = childRunId("run_root", "toolu_p1");
    const key = `${childId}:toolu_c1`;
    expect(order.length).toBeGreaterThan(10);
    for (let cut = 1; cut < order.length; cut += 1) {
      const partial = memoryEventStore();
      const prefix = order.slice(0, cut);
      for (const runId of new Set(prefix.map((entry) => entry.runId))) {
        const events = prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event);
        await partial.append(runId, events, { expectedSeq: 0 });
      }
      const responses = (runId: string) =>
        prefix.filter((entry) => entry.runId === runId && entry.event.type === "model-response")
          .length;
      const { parent, effects } = tree(partial, {
        parent: responses("run_root"),
        child: responses(childId),
      });
      const resumed = await parent.resume("run_root");
      expect(resumed.error ?? resumed.status, `cut ${cut}`).toBe("completed");
      expect(resumed.answer).toBe("Billing says: charged 5.");
      const charged = prefix.some(
        (entry) => entry.runId === childId && entry.event.type === "tool-call-result",
      );
      expect(effects, `cut ${cut}`).toEqual(charged ? [] : [`charge 5 ${key}`]);
      const rootLog = await partial.read("run_root");
      expect(rootLog.filter((event) => event.type === "child-run-start")).toHaveLength(1);
      expect(rootLog.filter((event) => event.type === "child-run-end")).toHaveLength(1);
      const childLog = await partial.read(childId);
      expect(childLog.filter((event) => event.type === "run-start")).toHaveLength(1);
      expect(childLog.at(-1)).toMatchObject({ type: "run-end", status: "completed" });
    }
  });

  it("a completed child is never run again: its recorded answer is the result", async () => {
    const { store, order } = recordingStore();
    await tree(store, { parent: 0, child: 0 }).parent.run("Charge", { runId: "run_root" });
    // Cut right after the child's run-end: the parent has no child-run-end yet.
    const childId = childRunId("run_root", "toolu_p1");
    const cut =
      order.findIndex((entry) => entry.runId === childId && entry.event.type === "run-end") + 1;
    const partial = memoryEventStore();
    const prefix = order.slice(0, cut);
    for (const runId of ["run_root", childId])
      await partial.append(
        runId,
        prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
        { expectedSeq: 0 },
      );
    const { parent, effects, childModel } = tree(partial, { parent: 1, child: 2 });
    const resumed = await parent.resume("run_root");
    expect(resumed.status).toBe("completed");
    expect(effects).toEqual([]);
    expect(childModel.requests).toHaveLength(0);
    const childLog = await partial.read(childId);
    expect(childLog.filter((event) => event.type === "run-resume")).toHaveLength(0);
  });

  it("a worker's runner parks the parent awaiting_child; the child advances alone; the parent wakes to its outcome", async () => {
    const store = memoryEventStore();
    const handedOff: string[] = [];
    const effects: string[] = [];
    const charge = tool({
      name: "charge_card",
      description: "Charges the card",
      input: v.object({ amount: v.number() }),
      run: (args, context) => {
        effects.push(`charge ${args.amount} ${context.idempotencyKey}`);
        return "ok";
      },
    });
    const child = createAgent({
      model: scriptedModel(childScript),
      tools: [charge],
      agentId: "billing",
      store,
    });
    const parent = createAgent({
      model: scriptedModel(parentScript),
      tools: [child.asTool({ name: "billing", description: "Handles billing" })],
      agentId: "lead",
      store,
      budget: { maxUsd: 1 },
      childRunner: {
        name: "queue",
        async run(request, control) {
          const done = await control.recorded();
          if (done) return done;
          await control.create();
          handedOff.push(request.childRunId);
          return { type: "parked", status: "awaiting_child" };
        },
      },
    });
    const first = await parent.run("Charge", { runId: "run_root" });
    const childId = childRunId("run_root", "toolu_p1");
    expect(first.status).toBe("awaiting_child");
    expect(handedOff).toEqual([childId]);
    expect(effects).toEqual([]);
    expect((await store.list()).find((row) => row.runId === "run_root")?.status).toBe(
      "awaiting_child",
    );
    // The worker's child job: the root agent advances the child by its id.
    const childResult = await parent.resume(childId);
    expect(childResult).toMatchObject({ status: "completed", answer: "Charged 5." });
    expect(effects).toEqual([`charge 5 ${childId}:toolu_c1`]);
    // The child ended: the worker wakes the parent, which reads the recorded outcome.
    const woken = await parent.resume("run_root");
    expect(woken).toMatchObject({ status: "completed", answer: "Billing says: charged 5." });
    expect(handedOff).toHaveLength(1);
    expect(effects).toHaveLength(1);
    const rootLog = await store.read("run_root");
    expect(rootLog.map((event) => event.type)).toEqual(
      expect.arrayContaining(["child-run-start", "child-run-wait", "child-run-end"]),
    );
    expect(woken.costUsd).toBeGreaterThan(first.costUsd);
  });
});
