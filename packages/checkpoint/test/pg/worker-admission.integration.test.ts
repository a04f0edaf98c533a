/**
 * Admission control of a worker's slices, on a real PostgreSQL: a worker advances at most
 * `concurrency` runs at once (never one more, and it does reach its limit), the others wait in
 * the queue by priority then in the order they were queued, and each slice reports how long
 * its run waited (on the database's clock).
 */
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { createWorker, type SliceReport } from "../../src/worker.js";
import { submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

describe.skipIf(!databaseUrl)("worker admission: concurrency, order, queue wait", () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) {
      await dropSchema(schema);
      await dropSchema(`${schema}_boss`);
    }
  });

  /**
   * An agent whose one tool call records the runs inside it and holds until `release()` says
   * so (or at least `holdMs`), so a test decides when slots free up, not the machine's pace.
   */
  const holdingAgent = (
    inside: Set<string>,
    peak: { value: number },
    hold: (runId: string) => Promise<void>,
    order: string[],
  ) => {
    const work = tool({
      name: "work",
      description: "Does some work.",
      input: v.object({}),
      run: async (_args, context) => {
        const runId = context.idempotencyKey.split(":")[0]!;
        order.push(runId);
        inside.add(runId);
        peak.value = Math.max(peak.value, inside.size);
        try {
          await hold(runId);
        } finally {
          inside.delete(runId);
        }
        return "done";
      },
    });
    return (view: Parameters<Parameters<typeof createWorker>[0]["agent"]>[0]) =>
      createAgent({
        store: view,
        tools: [work],
        model: scriptedModel([
          { content: [{ type: "tool_use", id: "toolu_1", name: "work", input: {} }] },
          { content: "finished" },
        ]),
      });
  };

  const waitFor = async (done: () => boolean, ms: number, what: string) => {
    const until = Date.now() + ms;
    while (!done()) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it("takes at most `concurrency` runs at once, and does reach it", async () => {
    const schema = freshSchema("lg_admit_cap");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 8 });
    const concurrency = 3;
    const total = 9;
    const inside = new Set<string>();
    const peak = { value: 0 };
    const ended = new Set<string>();
    // Every tool call holds until the test opens the gate: the test looks at the queue while
    // the worker's slots are all taken.
    let open: () => void = () => {};
    let gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    for (let index = 0; index < total; index++)
      await submitRun({ store }, "work", { runId: `cap-${index}` });
    const worker = createWorker({
      store,
      concurrency,
      leaseMs: 60_000,
      sliceMs: 30_000,
      pollingIntervalMs: 500,
      agent: holdingAgent(inside, peak, () => gate, []),
      onSlice: (report) => {
        if (report.outcome === "ended") ended.add(report.runId);
      },
    });
    const pool = await store.pool();
    const activeJobs = async () => {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}_boss".job WHERE name = 'loopguard-runs' AND state = 'active'`,
      );
      return Number((rows[0] as { n: number }).n);
    };
    const seen: { inside: number; active: number }[] = [];
    try {
      await worker.start();
      let finished = 0;
      while (finished < total) {
        const expected = Math.min(concurrency, total - finished);
        await waitFor(() => inside.size >= expected, 200_000, `${expected} runs inside`);
        // A worker that took more would hold a job it has not got to yet: active, not inside.
        await new Promise((resolve) => setTimeout(resolve, 300));
        seen.push({ inside: inside.size, active: await activeJobs() });
        const batch = [...inside];
        const release = open;
        gate = new Promise<void>((resolve) => {
          open = resolve;
        });
        release();
        await waitFor(() => batch.every((runId) => ended.has(runId)), 200_000, "the batch to end");
        finished = ended.size;
      }
    } finally {
      open();
      await worker.stop();
      await store.close();
    }
    expect(peak.value).toBe(concurrency);
    expect(seen).toEqual([
      { inside: 3, active: 3 },
      { inside: 3, active: 3 },
      { inside: 3, active: 3 },
    ]);
  }, 600_000);

  it("admits by priority, then first come, and reports each run's queue wait", async () => {
    const schema = freshSchema("lg_admit_order");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    const order: string[] = [];
    const reports: SliceReport[] = [];
    const holdMs = 300;
    const submitted = new Map<string, { before: number; after: number }>();
    for (const [runId, priority] of [
      ["low-1", 0],
      ["mid-1", 5],
      ["low-2", 0],
      ["high-1", 10],
      ["mid-2", 5],
      ["high-2", 10],
      ["low-3", 0],
    ] as const) {
      const before = Date.now();
      await submitRun({ store }, "work", { runId, priority });
      submitted.set(runId, { before, after: Date.now() });
    }
    const worker = createWorker({
      store,
      concurrency: 1,
      leaseMs: 60_000,
      sliceMs: 30_000,
      pollingIntervalMs: 500,
      agent: holdingAgent(
        new Set(),
        { value: 0 },
        () => new Promise((resolve) => setTimeout(resolve, holdMs)),
        order,
      ),
      onSlice: (report) => reports.push(report),
    });
    try {
      await worker.start();
      await waitFor(
        () => reports.filter((report) => report.outcome === "ended").length === 7,
        200_000,
        "7 runs to end",
      );
    } finally {
      await worker.stop();
      await store.close();
    }
    expect(order).toEqual(["high-1", "high-2", "mid-1", "mid-2", "low-1", "low-2", "low-3"]);
    const first = order.map((runId) => reports.find((report) => report.runId === runId)!);
    for (const [index, report] of first.entries()) {
      const wait = report.queueWaitMs;
      expect(wait, `${report.runId} reports its queue wait`).toBeTypeOf("number");
      // One slot: the k-th run admitted waited at least the k tool calls before it held it
      // (5 ms a hold of slack: a timer may fire a millisecond early and the clocks round).
      expect(wait!).toBeGreaterThanOrEqual(index * (holdMs - 5));
      // And no longer than from its submission to its slice (the database runs on this clock;
      // 50 ms for the two clocks' reading points).
      expect(wait!).toBeLessThanOrEqual(
        report.startedAt - submitted.get(report.runId)!.before + 50,
      );
    }
  }, 600_000);

  it("refuses a concurrency that is not a whole number of at least 1, with a [checkpoint] error", () => {
    for (const concurrency of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "4"])
      expect(() =>
        createWorker({
          connectionString: databaseUrl!,
          agent: () => ({}) as never,
          concurrency: concurrency as number,
        }),
      ).toThrow(/\[checkpoint\] createWorker: concurrency must be an integer of at least 1/);
  });
});
