/**
 * Workers outlive their database: two in-process workers with runs in flight while a
 * PostgreSQL server of this test's own (not the shared one) is stopped with `pg_ctl stop -m
 * fast` and started again, twice. No worker may crash (an uncaught `Connection terminated
 * unexpectedly` used to end the process), each must report "database unreachable" while the
 * server is down and resume by itself, and every run must complete with a log that folds.
 * The freeze store on the same server must fail closed while it is down and read again after.
 *
 * Needs PostgreSQL 15's binaries and root (the server runs as the `postgres` user through
 * scripts/postgres.sh); skipped with a message otherwise.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createAgent, tool } from "@loopguard/core";
import { foldRun } from "@loopguard/core/plugin";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { postgresFreezeStore } from "../../src/postgres-freeze-store.js";
import { createWorker, type Worker, type WorkerStatus } from "../../src/worker.js";
import { submitRun } from "../../src/worker-submit-run.js";

const here = dirname(fileURLToPath(import.meta.url));
const script = resolve(here, "../../../../scripts/postgres.sh");
const bin = "/usr/lib/postgresql/15/bin";
const port = 54_397;
const data = `/tmp/loopguard-pg-${port}/data`;
const url = `postgres://postgres@127.0.0.1:${port}/loopguard_test`;
const isRoot = process.getuid?.() === 0;
const available = existsSync(`${bin}/pg_ctl`) && isRoot && existsSync("/usr/sbin/runuser");
if (!available)
  console.warn(
    `\n[checkpoint tests] the PostgreSQL restart test is SKIPPED: it needs ${bin}/pg_ctl and root (to run its own server as the postgres user through scripts/postgres.sh on port ${port})\n`,
  );

const server = (command: "start" | "stop") =>
  execFileSync("bash", [script, command], {
    env: { ...process.env, PGPORT_LOOPGUARD: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
/** Stops the server but keeps its data (scripts/postgres.sh stop would delete it). */
const stopKeepingData = () =>
  execFileSync(
    "runuser",
    ["-u", "postgres", "--", `${bin}/pg_ctl`, "-D", data, "-m", "fast", "-w", "stop"],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

describe.skipIf(!available)("workers across PostgreSQL restarts", () => {
  const schema = "lg_restart";
  const workers: Worker[] = [];
  const statuses: WorkerStatus[] = [];
  const errors: Array<{ where: string; message: string }> = [];
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  /** Executions per idempotency key. */
  const executions = new Map<string, number>();

  beforeAll(() => {
    // A previous run killed midway may have left the server behind: start from a fresh one.
    server("stop");
    server("start");
    process.on("uncaughtException", onUncaught);
  }, 180_000);

  afterAll(async () => {
    process.off("uncaughtException", onUncaught);
    await Promise.all(workers.map((worker) => worker.stop().catch(() => undefined)));
    server("stop");
  }, 120_000);

  const agentFactory = (store: Parameters<Parameters<typeof createWorker>[0]["agent"]>[0]) => {
    const step = tool({
      name: "record",
      description: "Records one step of the run.",
      input: v.object({ n: v.number() }),
      idempotent: true,
      run: async (_args, context) => {
        executions.set(context.idempotencyKey, (executions.get(context.idempotencyKey) ?? 0) + 1);
        return "recorded";
      },
    });
    const model = scriptedModel(
      (request) => {
        const results = request.messages.filter(
          (message) =>
            message.role === "user" &&
            Array.isArray(message.content) &&
            message.content.some((block) => block.type === "tool_result"),
        ).length;
        if (results >= 4) return { content: "done", delayMs: 40 };
        return {
          content: [
            { type: "tool_use", id: `toolu_${results}`, name: "record", input: { n: results } },
          ],
          delayMs: 40,
        };
      },
      { copyRequests: false },
    );
    return createAgent({ model, tools: [step], store, agentId: "restart-test" });
  };

  it("no worker crashes, each reports the outage and resumes, and every run completes", async () => {
    const store = postgresEventStore({ connectionString: url, schema, max: 2 });
    await store.migrate();
    for (const name of ["r1", "r2"]) {
      const worker = createWorker({
        connectionString: url,
        schema,
        id: name,
        agent: agentFactory,
        concurrency: 3,
        sliceMs: 300,
        leaseMs: 2_000,
        pollingIntervalMs: 500,
        maintenanceIntervalMs: 1_000,
        maxBackoffMs: 1_000,
        onStatus: (status) => statuses.push(status),
        onError: (error, where) =>
          errors.push({ where, message: error instanceof Error ? error.message : String(error) }),
      });
      await worker.start();
      workers.push(worker);
    }
    const freezes = postgresFreezeStore({ connectionString: url, schema, cacheMs: 0 });
    expect((await freezes.status()).frozen).toBe(false);

    const runIds = Array.from({ length: 24 }, (_, index) => `restart-${index}`);
    for (const runId of runIds) await submitRun({ store }, `task ${runId}`, { runId });

    for (let restart = 0; restart < 2; restart += 1) {
      // Let slices get under way, then take the server away for a couple of seconds.
      await sleep(900);
      stopKeepingData();
      // While it is down the kill switch's store fails, so the kill switch reads it as frozen.
      await expect(freezes.status()).rejects.toThrow();
      await sleep(2_000);
      server("start");
    }

    const deadline = Date.now() + 120_000;
    let completed = 0;
    while (Date.now() < deadline) {
      try {
        completed = (await store.list({ status: "completed" })).length;
      } catch {
        // The store's own pool may still be reconnecting.
      }
      if (completed === runIds.length) break;
      await sleep(250);
    }
    expect(completed).toBe(runIds.length);
    expect((await freezes.status()).frozen).toBe(false);

    for (const runId of runIds) {
      const events = await store.read(runId);
      expect(foldRun(events, runId).status).toBe("completed");
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    }
    expect(uncaught).toEqual([]);
    // Each worker saw the database go and come back (after its backoff, at most 1 s).
    const lastOf = (name: string) => statuses.filter((status) => status.workerId === name).at(-1);
    const backBy = Date.now() + 15_000;
    while (
      Date.now() < backBy &&
      ["r1", "r2"].some((name) => lastOf(name)?.type !== "database-reachable")
    )
      await sleep(100);
    for (const name of ["r1", "r2"]) {
      const mine = statuses.filter((status) => status.workerId === name);
      expect(mine.some((status) => status.type === "database-unreachable")).toBe(true);
      expect(mine.at(-1)?.type).toBe("database-reachable");
    }
    expect(errors.some((error) => /database unreachable/.test(error.message))).toBe(true);
    const repeated = [...executions.values()].filter((count) => count > 1).length;
    console.log(
      `[restart] ${runIds.length} runs completed through 2 restarts; ${executions.size} tool calls, ${repeated} re-run with their idempotency key after a lost result; ` +
        `outages reported: ${statuses.filter((status) => status.type === "database-unreachable").length}, errors reported: ${errors.length}`,
    );
    await freezes.close();
    await store.close();
  }, 240_000);
});
