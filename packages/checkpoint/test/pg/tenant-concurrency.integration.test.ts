/**
 * Concurrency per tenant across workers, and priorities: with `tenantConcurrency: 1`, two
 * workers of three slots each never advance two runs of one tenant at once, a tenant with a
 * backlog does not hold up another tenant, and a run submitted with a higher priority is
 * taken first.
 */
import { createAgent, type RunBudget, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { createWorker, type SliceReport, type Worker } from "../../src/worker.js";
import { submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

describe.skipIf(!databaseUrl)("tenantConcurrency and priorities", () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) {
      await dropSchema(schema);
      await dropSchema(`${schema}_boss`);
    }
  });

  /** An agent whose one tool call takes `toolMs` and records which runs are inside it. */
  const agentOf = (
    active: Map<string, number>,
    peaks: Map<string, number>,
    tenantOf: (runId: string) => string,
    order: string[],
    toolMs: number,
  ) => {
    const work = tool({
      name: "work",
      description: "Does some work.",
      input: v.object({}),
      run: async (_args, context) => {
        const runId = context.idempotencyKey.split(":")[0]!;
        const tenant = tenantOf(runId);
        order.push(runId);
        active.set(tenant, (active.get(tenant) ?? 0) + 1);
        peaks.set(tenant, Math.max(peaks.get(tenant) ?? 0, active.get(tenant)!));
        await new Promise((resolve) => setTimeout(resolve, toolMs));
        active.set(tenant, active.get(tenant)! - 1);
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

  const waitFor = async (done: () => boolean, ms: number) => {
    const until = Date.now() + ms;
    while (!done() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
  };

  it("at most K runs of a tenant at once across the fleet; another tenant is not blocked", async () => {
    const schema = freshSchema("lg_tenants");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    const tenants = new Map<string, string>();
    const active = new Map<string, number>();
    const peaks = new Map<string, number>();
    const order: string[] = [];
    const ended = new Map<string, number>();
    const deferred: string[] = [];
    const workers: Worker[] = [0, 1].map((index) =>
      createWorker({
        connectionString: databaseUrl!,
        schema,
        id: `w${index}`,
        concurrency: 3,
        tenantConcurrency: 1,
        leaseMs: 4_000,
        sliceMs: 2_000,
        pollingIntervalMs: 500,
        agent: agentOf(active, peaks, (runId) => tenants.get(runId)!, order, 300),
        onSlice: (report: SliceReport) => {
          if (report.outcome === "ended") ended.set(report.runId, Date.now());
          if (report.outcome === "deferred") deferred.push(report.runId);
        },
      }),
    );
    for (let index = 0; index < 4; index += 1) {
      const { runId } = await submitRun({ store }, "busy tenant", {
        tenant: "acme",
        runId: `acme-${index}`,
      });
      tenants.set(runId, "acme");
    }
    for (let index = 0; index < 2; index += 1) {
      const { runId } = await submitRun({ store }, "small tenant", {
        tenant: "globex",
        runId: `globex-${index}`,
      });
      tenants.set(runId, "globex");
    }
    try {
      await Promise.all(workers.map((worker) => worker.start()));
      await waitFor(() => ended.size === 6, 25_000);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await store.close();
    }
    expect(ended.size).toBe(6);
    expect(peaks.get("acme")).toBe(1);
    expect(peaks.get("globex")).toBe(1);
    expect(deferred.length).toBeGreaterThan(0);
    // globex's runs did not wait behind acme's backlog.
    const lastAcme = Math.max(...[0, 1, 2, 3].map((index) => ended.get(`acme-${index}`)!));
    const lastGlobex = Math.max(ended.get("globex-0")!, ended.get("globex-1")!);
    expect(lastGlobex).toBeLessThan(lastAcme);
    // The run-start of a run submitted with a tenant records it (what tenantBudget counts).
    const check = postgresEventStore({ connectionString: databaseUrl!, schema, max: 1 });
    const [start] = await check.read("acme-0");
    // Every slot went back with its slice's job (taken with the claim, released in the
    // transaction that ended the job): none is left held once the runs ended.
    const { rows: held } = await (await check.pool()).query(
      `SELECT count(*)::int AS n FROM "${schema}".tenant_slots`,
    );
    await check.close();
    expect(start?.type === "run-start" && start.context?.tenant).toBe("acme");
    expect(held[0]?.n).toBe(0);
  }, 600_000);

  it("a run with a higher priority is taken first", async () => {
    const schema = freshSchema("lg_priority");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    const order: string[] = [];
    const ended = new Set<string>();
    for (const [runId, priority] of [
      ["low-1", 0],
      ["low-2", 0],
      ["high", 10],
    ] as const)
      await submitRun({ store }, "work", { runId, priority });
    const worker = createWorker({
      store,
      concurrency: 1,
      leaseMs: 4_000,
      sliceMs: 2_000,
      pollingIntervalMs: 500,
      agent: agentOf(new Map(), new Map(), () => "t", order, 10),
      onSlice: (report) => {
        if (report.outcome === "ended") ended.add(report.runId);
      },
    });
    try {
      await worker.start();
      await waitFor(() => ended.size === 3, 15_000);
    } finally {
      await worker.stop();
      await store.close();
    }
    expect(order[0]).toBe("high");
    expect(ended.size).toBe(3);
  }, 600_000);

  it("a run whose budget store is down waits in the queue on a backoff, not lost, and finishes once it is back", async () => {
    const schema = freshSchema("lg_budget_down");
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    let down = true;
    const budget: RunBudget = {
      name: "flaky",
      async reserve() {
        if (down)
          throw new Error("[checkpoint] postgresLimitStore.reserve: cannot reach PostgreSQL");
        return { ok: true };
      },
      async settle() {},
    };
    const reports: SliceReport[] = [];
    const worker = createWorker({
      store,
      concurrency: 1,
      leaseMs: 4_000,
      sliceMs: 2_000,
      pollingIntervalMs: 500,
      agent: (view) =>
        createAgent({
          store: view,
          tools: [],
          budgets: [budget],
          model: scriptedModel([{ content: "done" }]),
        }),
      onSlice: (report) => reports.push(report),
    });
    await submitRun({ store }, "work", { runId: "budget-down", tenant: "acme" });
    try {
      await worker.start();
      await waitFor(
        () => reports.filter((report) => report.outcome === "deferred").length >= 2,
        10_000,
      );
      down = false;
      await waitFor(() => reports.some((report) => report.outcome === "ended"), 15_000);
    } finally {
      await worker.stop();
      await store.close();
    }
    const deferred = reports.filter((report) => report.outcome === "deferred");
    expect(deferred.length).toBeGreaterThanOrEqual(2);
    expect(deferred[0]!.error).toMatch(
      /run budget flaky could not be checked.*cannot reach PostgreSQL/,
    );
    // Backoff: the second wait is longer than the first (1 s, then 2 s).
    expect(deferred[1]!.startedAt - deferred[0]!.startedAt).toBeGreaterThanOrEqual(900);
    expect(reports.at(-1)).toMatchObject({ outcome: "ended", status: "completed" });
  }, 600_000);

  it("bad tenants, priorities and caps are refused with [checkpoint] errors", async () => {
    await expect(
      submitRun({ connectionString: databaseUrl! }, "x", { tenant: "bad tenant!" }),
    ).rejects.toThrow(/\[checkpoint\] submitRun: tenant "bad tenant!" is invalid/);
    await expect(
      submitRun({ connectionString: databaseUrl! }, "x", { priority: 1.5 }),
    ).rejects.toThrow(/\[checkpoint\] submitRun: priority must be a whole number/);
    for (const tenantConcurrency of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1.5])
      expect(() =>
        createWorker({
          connectionString: databaseUrl!,
          agent: () => ({}) as never,
          tenantConcurrency,
        }),
      ).toThrow(
        /\[checkpoint\] createWorker: tenantConcurrency must be a whole number of at least 1/,
      );
  });
});
