/**
 * Several worker processes (compiled JS, child node processes) share one database while the
 * suite kills some with SIGKILL and pauses others with SIGSTOP past their lease. Every run
 * must complete exactly once, every side effect happen once, no event be written by a fenced
 * worker, every log replay cleanly, and a parked approval be answered from this process and
 * finished by a worker.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { foldRun } from "@loopguard/core/plugin";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PostgresEventStore, postgresEventStore } from "../../src/postgres-event-store.js";
import { approveQueuedRun, submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";
// @ts-expect-error: a plain .mjs fixture shared with the child processes
import { createSideEffectTables, testAgentFactory } from "./fixtures/agent.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../../..");
const LEASE_MS = 3_000;
const SLICE_MS = 600;
const STEP_DELAY_MS = 400;

interface Line {
  worker: string;
  pid: number;
  at: number;
  event: string;
  runId?: string;
  epoch?: number;
  outcome?: string;
  error?: string;
  message?: string;
}

describe.skipIf(!databaseUrl)("workers on pg-boss, across processes", () => {
  const schema = freshSchema("lg_workers");
  const lines: Line[] = [];
  const children = new Map<string, ChildProcess>();
  let store: PostgresEventStore;
  let count = 0;

  const spawnWorker = async (): Promise<string> => {
    count += 1;
    const name = `w${count}`;
    const child = spawn(process.execPath, [resolve(here, "fixtures/worker-process.mjs")], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        LG_SCHEMA: schema,
        WORKER_NAME: name,
        LEASE_MS: String(LEASE_MS),
        SLICE_MS: String(SLICE_MS),
        STEP_DELAY_MS: String(STEP_DELAY_MS),
        CONCURRENCY: "2",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.set(name, child);
    const ready = new Promise<void>((resolveReady, reject) => {
      child.once("exit", (code) =>
        reject(new Error(`worker ${name} exited with ${code} before it was ready`)),
      );
      createInterface({ input: child.stdout! }).on("line", (text) => {
        let line: Line;
        try {
          line = JSON.parse(text) as Line;
        } catch {
          return;
        }
        lines.push(line);
        if (line.event === "ready") resolveReady();
      });
    });
    await ready;
    return name;
  };

  /** Runs a worker has claimed and not yet reported a slice for. */
  const inFlight = (name: string): string[] => {
    const open = new Map<string, number>();
    for (const line of lines) {
      if (line.worker !== name || !line.runId) continue;
      if (line.event === "claim") open.set(line.runId, (open.get(line.runId) ?? 0) + 1);
      if (line.event === "slice") open.set(line.runId, (open.get(line.runId) ?? 1) - 1);
    }
    return [...open].filter(([, n]) => n > 0).map(([runId]) => runId);
  };

  const waitFor = async (
    what: string,
    test: () => boolean | Promise<boolean>,
    timeoutMs: number,
  ) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await test())) {
      if (Date.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  };

  beforeAll(async () => {
    // Children run compiled JS: build core and this package's PostgreSQL and worker modules.
    execFileSync("npx", ["tsc", "-p", "packages/core/tsconfig.build.json"], {
      cwd: repo,
      stdio: "inherit",
    });
    execFileSync("npx", ["tsc", "-p", "packages/checkpoint/test/pg/tsconfig.workers.json"], {
      cwd: repo,
      stdio: "inherit",
    });
    store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    await createSideEffectTables(await store.pool(), schema).catch(async () => {
      await store.migrate();
      await createSideEffectTables(await store.pool(), schema);
    });
  }, 120_000);

  afterAll(async () => {
    for (const child of children.values()) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    }
    await store?.close();
    await dropSchema(schema);
    await dropSchema(`${schema}_boss`);
  });

  it("completes every run exactly once through SIGKILL and SIGSTOP, with approvals answered elsewhere", async () => {
    await store.migrate();
    const pool = await store.pool();
    await createSideEffectTables(pool, schema);
    await Promise.all([spawnWorker(), spawnWorker(), spawnWorker()]);

    const plain = Array.from({ length: 14 }, (_, index) => `run-${index}`);
    const approvals = Array.from({ length: 4 }, (_, index) => `refund-${index}`);
    const target = { store, leaseMs: LEASE_MS };
    // The last run is submitted twice at once, while its first job is still queued (the
    // workers poll every 0.5 s): the queue's singleton key absorbs the second.
    const last = approvals.at(-1)!;
    for (const runId of [...plain, ...approvals]) {
      const task = runId.startsWith("refund")
        ? `please refund order ${runId}`
        : `charge order ${runId}`;
      const [submitted, again] = await Promise.all([
        submitRun(target, task, { runId }),
        runId === last ? submitRun(target, task, { runId }) : undefined,
      ]);
      if (again) {
        expect([submitted.jobId, again.jobId].filter((jobId) => jobId === null)).toHaveLength(1);
        continue;
      }
      expect(submitted).toEqual({ runId, jobId: expect.any(String) });
    }

    // Answer parked approvals from this process (not a worker), as they appear.
    const answered = new Set<string>();
    const factory = testAgentFactory({ pool, schema, worker: "approver" });
    let approving = true;
    const approver = (async () => {
      while (approving) {
        for (const summary of await store.list({ status: "awaiting_approval" })) {
          if (answered.has(summary.runId)) continue;
          const result = await approveQueuedRun(
            target,
            summary.runId,
            { decision: "approve", approver: "test@acme" },
            { agent: factory },
          );
          expect(result.status).toBe("running");
          answered.add(summary.runId);
        }
        await new Promise((resolveWait) => setTimeout(resolveWait, 100));
      }
    })();

    // SIGKILL a worker in the middle of a slice, and start a replacement.
    await waitFor(
      "a worker with a slice in flight",
      () => ["w1", "w2", "w3"].some((name) => inFlight(name).length > 0),
      10_000,
    );
    const victim = ["w1", "w2", "w3"].find((name) => inFlight(name).length > 0)!;
    const killedRuns = inFlight(victim);
    const killedAt = Date.now();
    children.get(victim)!.kill("SIGKILL");
    await spawnWorker();

    // SIGSTOP another worker in the middle of a slice for longer than its lease, then SIGCONT it.
    const survivors = ["w1", "w2", "w3"].filter((name) => name !== victim);
    await waitFor(
      "another worker with a slice in flight",
      () => survivors.some((name) => inFlight(name).length > 0),
      10_000,
    );
    const zombie = survivors.find((name) => inFlight(name).length > 0)!;
    const zombieRuns = inFlight(zombie);
    children.get(zombie)!.kill("SIGSTOP");
    await new Promise((resolveWait) => setTimeout(resolveWait, LEASE_MS + 3_000));
    const continuedAt = Date.now();
    children.get(zombie)!.kill("SIGCONT");

    const all = [...plain, ...approvals];
    await waitFor(
      "every run to complete",
      async () =>
        (await store.list({ status: "completed" })).filter((summary) => all.includes(summary.runId))
          .length === all.length,
      45_000,
    );
    approving = false;
    await approver;
    // Let the zombie report what happened to its slices.
    await waitFor(
      "the zombie to report its paused slices",
      () =>
        zombieRuns.every((runId) =>
          lines.some(
            (line) =>
              line.worker === zombie &&
              line.event === "slice" &&
              line.runId === runId &&
              line.at >= continuedAt,
          ),
        ),
      10_000,
    );

    // Takeover: the first claim of a killed worker's run by another worker.
    const takeovers = killedRuns.map((runId) => {
      const claim = lines.find(
        (line) =>
          line.event === "claim" &&
          line.runId === runId &&
          line.at >= killedAt &&
          line.worker !== victim,
      );
      return claim ? claim.at - killedAt : Number.POSITIVE_INFINITY;
    });
    console.log(
      `[workers] SIGKILL takeover after ${takeovers.map((ms) => `${ms} ms`).join(", ")} (lease ${LEASE_MS} ms, pg-boss maintenance 1 s, polling 0.5 s); ` +
        `slices by outcome: ${JSON.stringify(Object.fromEntries(["paused", "parked", "ended", "fenced", "conflict", "failed"].map((outcome) => [outcome, lines.filter((line) => line.event === "slice" && line.outcome === outcome).length])))}`,
    );
    for (const ms of takeovers) expect(ms).toBeLessThan(LEASE_MS + 4_000);

    // The zombie woke up fenced: it wrote nothing more to the runs it held.
    for (const runId of zombieRuns) {
      const after = lines.filter(
        (line) =>
          line.worker === zombie &&
          line.event === "slice" &&
          line.runId === runId &&
          line.at >= continuedAt,
      );
      expect(after.map((line) => line.outcome)).toContain("fenced");
    }

    const { rows: effects } = await pool.query(
      `SELECT key, run_id, tool FROM "${schema}".side_effects ORDER BY key`,
    );
    const { rows: epochs } = await pool.query(
      `SELECT run_id, seq, epoch FROM "${schema}".events ORDER BY run_id, seq`,
    );
    for (const runId of all) {
      const events = await store.read(runId);
      // The log replays cleanly and ended exactly once.
      const fold = foldRun(events, runId);
      expect(fold.status).toBe("completed");
      expect(events.filter((event) => event.type === "run-start")).toHaveLength(1);
      expect(events.filter((event) => event.type === "run-end")).toHaveLength(1);
      expect(events.at(-1)?.type).toBe("run-end");
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
      // Each tool ran to one result, and its side effect happened once.
      const results = events.filter((event) => event.type === "tool-call-result");
      expect(results.map((event) => (event as { toolUseId: string }).toolUseId)).toEqual([
        "toolu_1",
        "toolu_2",
      ]);
      const second = runId.startsWith("refund") ? "refund" : "notify";
      expect(
        effects.filter((row) => row.run_id === runId).map((row) => [row.key, row.tool]),
      ).toEqual([
        [`${runId}:toolu_1`, "charge"],
        [`${runId}:toolu_2`, second],
      ]);
      // No event was written by a fenced worker: epochs never go back along the log.
      const runEpochs = epochs
        .filter((row) => row.run_id === runId)
        .map((row) => Number(row.epoch));
      expect(runEpochs).toEqual([...runEpochs].sort((a, b) => a - b));
    }
    // The approvals were answered here and the runs finished by a worker that claimed them afterwards.
    expect([...answered].sort()).toEqual([...approvals].sort());
    for (const runId of approvals) {
      const events = await store.read(runId);
      const decision = events.findIndex((event) => event.type === "approval-decision");
      expect(decision).toBeGreaterThan(0);
      const decisionEpoch = Number(
        epochs.find((row) => row.run_id === runId && row.seq === decision)!.epoch,
      );
      const endEpoch = Number(
        epochs.find((row) => row.run_id === runId && row.seq === events.length - 1)!.epoch,
      );
      expect(endEpoch).toBeGreaterThan(decisionEpoch);
      expect(
        lines.some(
          (line) => line.event === "claim" && line.runId === runId && line.epoch === endEpoch,
        ),
      ).toBe(true);
    }
    expect(
      lines.filter(
        (line) => line.event === "error" && !/claimed again|fenced/.test(line.message ?? ""),
      ),
    ).toEqual([]);
  }, 600_000);
});
