/**
 * Delegation trees on PostgreSQL workers: each child run of an `asTool` call is a pg-boss job of
 * its own (job id derived from the child run id, so it is queued once), any worker may take it
 * under its own claim, the parent parks `awaiting_child` and is queued again when its child
 * ends. Fencing holds per run: a slice's store view may create its own children's logs and
 * nothing else, and a claim on a child never fences its parent.
 */
import {
  childRunId,
  createAgent,
  type EventStore,
  type ModelRequest,
  type StoredEvent,
  tool,
} from "@loopguard/core";
import { type ScriptedReply, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { createWorker, type SliceContext, type SliceReport } from "../../src/worker.js";
import { childJobId } from "../../src/worker-child-runner.js";
import { approveQueuedRun, submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

const results = (request: ModelRequest) =>
  request.messages.flatMap((message) =>
    Array.isArray(message.content)
      ? message.content.filter((block) => block.type === "tool_result")
      : [],
  ).length;

/** A model that calls `count` copies of `name` at once, then answers (a function of the request, so a resume gets the same replies). */
const fanOut = (who: string, name: string, count: number) =>
  scriptedModel(
    (request: ModelRequest): ScriptedReply =>
      results(request) === 0
        ? {
            content: Array.from({ length: count }, (_, index) => ({
              type: "tool_use" as const,
              id: `toolu_${who}_${index}`,
              name,
              input: name === "act" || name === "refund" ? {} : { task: `part ${index}` },
            })),
          }
        : { content: `${who} is done.` },
  );

/** The tree: a lead calls 2 managers at once, each calls 2 workers at once; a worker acts once. */
function treeFactory(effects: Map<string, number>) {
  return (store: EventStore, slice: SliceContext) => {
    const act = tool({
      name: "act",
      description: "Does the work (a side effect).",
      input: v.object({}),
      run: async (_args, context) => {
        effects.set(context.idempotencyKey, (effects.get(context.idempotencyKey) ?? 0) + 1);
        return "acted";
      },
    });
    const worker = createAgent({
      agentId: "worker",
      store,
      tools: [act],
      model: fanOut("worker", "act", 1),
    });
    const manager = createAgent({
      agentId: "manager",
      store,
      tools: [worker.asTool({ name: "worker", description: "Does one part." })],
      model: fanOut("manager", "worker", 2),
    });
    return createAgent({
      agentId: "lead",
      store,
      budget: { maxUsd: 5 },
      tools: [manager.asTool({ name: "manager", description: "Runs a team." })],
      model: fanOut("lead", "manager", 2),
      childRunner: slice.childRunner,
    });
  };
}

describe.skipIf(!databaseUrl)("delegation trees on PostgreSQL workers", () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) {
      await dropSchema(schema);
      await dropSchema(`${schema}_boss`);
    }
  });

  it("runs each child as its own job on either of two workers; parents park awaiting_child and wake when children end", async () => {
    const schema = freshSchema("lg_trees");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 8 });
    const effects = new Map<string, number>();
    const reports: SliceReport[] = [];
    const workers = ["worker-a", "worker-b"].map((id) =>
      createWorker({
        id,
        store,
        concurrency: 2,
        leaseMs: 20_000,
        sliceMs: 10_000,
        pollingIntervalMs: 500,
        agent: treeFactory(effects),
        onSlice: (report) => reports.push(report),
      }),
    );
    const rootId = "run_tree_root";
    await submitRun({ store }, "Run the project.", { runId: rootId, priority: 3 });
    try {
      for (const worker of workers) await worker.start();
      const until = Date.now() + 200_000;
      while (!reports.some((report) => report.runId === rootId && report.outcome === "ended")) {
        if (Date.now() > until) throw new Error(`the tree did not end: ${JSON.stringify(reports)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      for (const worker of workers) await worker.stop();
    }
    const managers = [0, 1].map((index) => childRunId(rootId, `toolu_lead_${index}`));
    const leaves = managers.flatMap((manager) =>
      [0, 1].map((index) => childRunId(manager, `toolu_manager_${index}`)),
    );
    const logs = new Map<string, StoredEvent[]>();
    for (const runId of [rootId, ...managers, ...leaves]) logs.set(runId, await store.read(runId));
    // Seven runs, each ended once, each child linked to the parent and call its id derives from.
    expect((await store.list({ limit: 100 })).map((summary) => summary.runId).sort()).toEqual(
      [rootId, ...managers, ...leaves].sort(),
    );
    for (const [runId, events] of logs) {
      expect(
        events.filter((event) => event.type === "run-start"),
        runId,
      ).toHaveLength(1);
      expect(events.at(-1), runId).toMatchObject({ type: "run-end", status: "completed" });
    }
    // Each parent parked on its children, then read both outcomes once.
    for (const parent of [rootId, ...managers]) {
      const events = logs.get(parent)!;
      expect(
        events.some(
          (event) => event.type === "child-run-wait" && event.status === "awaiting_child",
        ),
        parent,
      ).toBe(true);
      expect(
        events.filter((event) => event.type === "child-run-end"),
        parent,
      ).toHaveLength(2);
    }
    // Every leaf acted exactly once.
    expect([...effects.entries()].sort()).toEqual(
      leaves.map((leaf) => [`${leaf}:toolu_worker_0`, 1]).sort(),
    );
    // Every child ran in slices of its own (its own claim), and the parents parked as awaiting_child.
    // (A parent woken by both children may take one more slice that finds it already ended.)
    const ended = reports
      .filter((report) => report.outcome === "ended")
      .map((report) => report.runId);
    expect([...new Set(ended)].sort()).toEqual([rootId, ...managers, ...leaves].sort());
    expect(
      reports.filter((report) => report.outcome === "parked" && report.status === "awaiting_child")
        .length,
    ).toBeGreaterThanOrEqual(3);
    expect(reports.filter((report) => report.outcome === "failed")).toEqual([]);
    // Each child's first job has the id derived from its run id, with the parent's priority.
    const pool = await store.pool();
    for (const child of [...managers, ...leaves]) {
      const { rows } = await pool.query(
        `SELECT singleton_key, priority FROM "${schema}_boss".job WHERE id = $1`,
        [childJobId(child)],
      );
      expect(rows, child).toEqual([{ singleton_key: child, priority: 3 }]);
    }
    await store.close();
  }, 600_000);

  it("one worker with one slot runs a whole tree: a parked parent holds no slot", async () => {
    const schema = freshSchema("lg_tree_one_slot");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    const effects = new Map<string, number>();
    const reports: SliceReport[] = [];
    const worker = createWorker({
      store,
      concurrency: 1,
      leaseMs: 20_000,
      sliceMs: 10_000,
      pollingIntervalMs: 500,
      agent: treeFactory(effects),
      onSlice: (report) => reports.push(report),
    });
    await submitRun({ store }, "Run the project.", { runId: "run_one_slot" });
    try {
      await worker.start();
      const until = Date.now() + 200_000;
      while (
        !reports.some((report) => report.runId === "run_one_slot" && report.outcome === "ended")
      ) {
        if (Date.now() > until) throw new Error(`the tree did not end: ${JSON.stringify(reports)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await worker.stop();
    }
    expect((await store.list({ limit: 100 })).map((summary) => summary.status)).toEqual(
      Array.from({ length: 7 }, () => "completed"),
    );
    expect([...effects.values()]).toEqual([1, 1, 1, 1]);
    await store.close();
  }, 600_000);

  it("an approval asked inside a child on a worker parks the child and its parent; approveQueuedRun on the child finishes both", async () => {
    const schema = freshSchema("lg_tree_approval");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 6 });
    const refunds: string[] = [];
    const factory = (view: EventStore, slice: SliceContext) => {
      const refund = tool({
        name: "refund",
        description: "Refunds the order.",
        input: v.object({}),
        run: async (_args, context) => {
          refunds.push(context.idempotencyKey);
          return "refunded";
        },
      });
      const refunder = createAgent({
        agentId: "refunder",
        store: view,
        tools: [refund],
        model: fanOut("refunder", "refund", 1),
        gates: [
          {
            name: "refund-approval",
            step: "2",
            digest: () => "refund-approval:v1",
            check: (call) =>
              call.tool === "refund"
                ? {
                    type: "ask",
                    reason: "refund_needs_person",
                    message: "A person approves refunds.",
                  }
                : { type: "allow" },
          },
        ],
      });
      return createAgent({
        agentId: "desk",
        store: view,
        approval: { durable: true },
        tools: [refunder.asTool({ name: "refunder", description: "Refunds orders." })],
        model: fanOut("desk", "refunder", 1),
        childRunner: slice.childRunner,
      });
    };
    const reports: SliceReport[] = [];
    const worker = createWorker({
      store,
      concurrency: 2,
      leaseMs: 20_000,
      sliceMs: 10_000,
      pollingIntervalMs: 500,
      agent: factory,
      onSlice: (report) => reports.push(report),
    });
    const rootId = "run_tree_approval";
    const childId = childRunId(rootId, "toolu_desk_0");
    const waitFor = async (what: string, done: () => Promise<boolean>) => {
      const until = Date.now() + 200_000;
      while (!(await done())) {
        if (Date.now() > until)
          throw new Error(`timed out waiting for ${what}: ${JSON.stringify(reports)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const statusOf = async (runId: string) =>
      (await store.list({ limit: 10 })).find((summary) => summary.runId === runId)?.status;
    await submitRun({ store }, "Refund order A1.", { runId: rootId });
    try {
      await worker.start();
      await waitFor(
        "both runs to wait on the approval",
        async () =>
          (await statusOf(childId)) === "awaiting_approval" &&
          (await statusOf(rootId)) === "awaiting_approval",
      );
      expect(refunds).toEqual([]);
      const result = await approveQueuedRun(
        { store },
        childId,
        { decision: "approve", approver: "ana@acme.test" },
        { agent: factory },
      );
      expect(result.status).toBe("running");
      await waitFor("the tree to end", async () => (await statusOf(rootId)) === "completed");
    } finally {
      await worker.stop();
    }
    expect(refunds).toEqual([`${childId}:toolu_refunder_0`]);
    expect((await store.read(childId)).at(-1)).toMatchObject({
      type: "run-end",
      status: "completed",
    });
    const root = await store.read(rootId);
    expect(root.filter((event) => event.type === "child-run-end")).toHaveLength(1);
    expect(
      root.some((event) => event.type === "child-run-wait" && event.status === "awaiting_approval"),
    ).toBe(true);
    await store.close();
  }, 600_000);

  it("an agent built without the slice's childRunner cannot run a child on a worker: the call fails as child_failed, the parent goes on", async () => {
    const schema = freshSchema("lg_tree_inline");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    const effects = new Map<string, number>();
    const build = treeFactory(effects);
    const reports: SliceReport[] = [];
    const worker = createWorker({
      store,
      concurrency: 1,
      leaseMs: 20_000,
      sliceMs: 10_000,
      pollingIntervalMs: 500,
      // The factory drops the runner: children would run inline, through the parent's view.
      agent: (view, slice) => build(view, { ...slice, childRunner: undefined as never }),
      onSlice: (report) => reports.push(report),
    });
    await submitRun({ store }, "Run the project.", { runId: "run_inline_root" });
    try {
      await worker.start();
      const until = Date.now() + 200_000;
      while (!reports.some((report) => report.outcome === "ended")) {
        if (Date.now() > until) throw new Error(`the run did not end: ${JSON.stringify(reports)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await worker.stop();
    }
    const events = await store.read("run_inline_root");
    const failed = events.filter((event) => event.type === "tool-call-result");
    expect(failed).toHaveLength(2);
    for (const result of failed)
      expect(result).toMatchObject({ isError: true, errorKind: "child_failed" });
    expect(JSON.stringify(failed)).toContain("pass the slice's childRunner to createAgent");
    expect(events.at(-1)).toMatchObject({ type: "run-end" });
    expect(effects.size).toBe(0);
    await store.close();
  }, 600_000);

  it("fences per run: a parent's view creates its children's logs and nothing else; claiming a child never fences its parent", async () => {
    const schema = freshSchema("lg_tree_fence");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    const parentId = "run_fence_parent";
    const epoch = await store.claim(parentId);
    const view = store.fenced(parentId, epoch);
    const start = (runId: string, callId: string, parent = parentId) => ({
      type: "run-start" as const,
      runId,
      agentId: "child",
      task: "t",
      model: "claude-sonnet-5-5",
      maxTokens: 100,
      budget: {},
      policyDigest: "p",
      toolDigest: "t",
      parent: { runId: parent, callId, tool: "child", depth: 1, rootRunId: parent },
      at: Date.now(),
    });
    const child = childRunId(parentId, "toolu_1");
    await view.append(child, [start(child, "toolu_1")], { expectedSeq: 0 });
    expect((await store.read(child))[0]).toMatchObject({
      type: "run-start",
      parent: { runId: parentId },
    });
    // Only a child's first event, only under the id its parent and call derive.
    await expect(
      view.append(
        child,
        [
          {
            type: "model-request",
            step: 1,
            maxTokens: 1,
            estimateUsd: 0,
            requestDigest: "d",
            at: Date.now(),
          },
        ],
        { expectedSeq: 1 },
      ),
    ).rejects.toThrow(
      /\[checkpoint\] this store view is fenced to run run_fence_parent .* cannot append to run/,
    );
    await expect(
      view.append("run_other", [start("run_other", "toolu_1")], { expectedSeq: 0 }),
    ).rejects.toThrow(/fenced to run run_fence_parent/);
    const grandchild = childRunId(child, "toolu_2");
    await expect(
      view.append(grandchild, [start(grandchild, "toolu_2", child)], { expectedSeq: 0 }),
    ).rejects.toThrow(/fenced to run run_fence_parent/);
    // Written once: a second creation conflicts and leaves the first.
    await expect(view.append(child, [start(child, "toolu_1")], { expectedSeq: 0 })).rejects.toThrow(
      /expected seq 0/,
    );
    // A worker claims the child: the parent's view still writes; the child's old epoch is fenced.
    const childEpoch = await store.claim(child);
    await store.fenced(child, childEpoch).confirmOwner(child);
    await view.append(
      parentId,
      [start(parentId, "x", "none")].map(({ parent: _parent, ...rest }) => ({
        ...rest,
        runId: parentId,
      })),
      { expectedSeq: 0 },
    );
    await store.claim(child);
    await expect(store.fenced(child, childEpoch).confirmOwner(child)).rejects.toThrow(
      /claimed again/,
    );
    await view.confirmOwner(parentId);
    await store.close();
  }, 600_000);
});
