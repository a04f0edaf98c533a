/**
 * `loopguard worker` for real: two built CLI worker processes on one PostgreSQL database advance
 * support-desk runs; one is killed with SIGKILL while it holds runs. Every run must complete
 * exactly once, pay one refund, send no email, keep PII out of the log (every token in the log
 * revealable from the run's vault in PostgreSQL, whichever worker wrote it), and a fleet freeze
 * must halt the next run at its first tool call.
 *
 * Needs DATABASE_URL (`eval "$(scripts/postgres.sh start)"`) and the built CLI.
 */
import { randomBytes } from "node:crypto";
import {
  type PostgresEventStore,
  postgresEventStore,
  postgresFreezeStore,
  submitRun,
} from "@loopguard/checkpoint";
import { createKeyring } from "@loopguard/redact";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresRunVault, postgresSubjectKeyStore, vaultKeys } from "../src/run-vault.js";
import { built, run, sensitive, start } from "./cli-helpers.js";

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  if (process.env.CI)
    throw new Error(
      '[demo tests] DATABASE_URL is not set under CI: start PostgreSQL with `eval "$(scripts/postgres.sh start)"` before the tests',
    );
  console.warn(
    '\n[demo tests] !!! DATABASE_URL is not set: the `loopguard worker` test is SKIPPED. Run `eval "$(scripts/postgres.sh start)"` to run it. !!!\n',
  );
}

const RUNS = 8;
const LEASE_MS = 3_000;
const schema = `lg_cli_worker_${randomBytes(4).toString("hex")}`;
const task = "Order A1001 arrived broken, refund please";

type Worker = ReturnType<typeof start>;

describe.skipIf(!built || !databaseUrl)("loopguard worker (built CLI, PostgreSQL)", () => {
  let store: PostgresEventStore;
  const workers: Worker[] = [];
  const target = () => ({ connectionString: databaseUrl!, schema, leaseMs: LEASE_MS });

  const startWorker = async (): Promise<Worker> => {
    const worker = start([
      "worker",
      "--connection",
      databaseUrl!,
      "--schema",
      schema,
      "--concurrency",
      "2",
      "--lease-ms",
      String(LEASE_MS),
      "--slice-ms",
      "1000",
      "--polling-ms",
      "500",
      "--step-delay",
      "250",
    ]);
    workers.push(worker);
    await worker.waitFor(/loopguard worker worker-[0-9a-f]+: 2 slice\(s\) at once/, 30_000);
    return worker;
  };

  /** Runs a worker has claimed and not yet reported a slice for, with the claim's epoch. */
  const inFlight = (worker: Worker): Map<string, number> => {
    const open = new Map<string, number>();
    for (const line of worker.output().split("\n")) {
      const claimed = /^slice (\S+): claimed \(epoch (\d+)\)/.exec(line);
      if (claimed) open.set(claimed[1]!, Number(claimed[2]));
      else {
        const ended = /^slice (\S+): [a-z]+/.exec(line);
        if (ended) open.delete(ended[1]!);
      }
    }
    return open;
  };

  const waitUntil = async (what: string, test: () => Promise<boolean>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await test())) {
      if (Date.now() > deadline) {
        const logs = workers.map((worker, index) => `--- worker ${index + 1}\n${worker.output()}`);
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${logs.join("\n")}`);
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  };

  const query = async (text: string, values: unknown[] = []) =>
    (await (await store.pool()).query(text, values)).rows;

  beforeAll(async () => {
    store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 3 });
    await store.migrate();
  });

  afterAll(async () => {
    for (const worker of workers)
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        worker.child.kill("SIGKILL");
    await Promise.all(workers.map((worker) => worker.exited));
    await query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`).catch(() => undefined);
    await store?.close();
  });

  it("completes every run exactly once, with one refund each, through a SIGKILL", async () => {
    const [first, second] = [await startWorker(), await startWorker()];
    const runIds: string[] = [];
    // Two runs go through `loopguard submit`, as an operator would queue them; the rest
    // through the library call a server would make.
    for (let index = 0; index < 2; index += 1) {
      const submitted = run(["submit", task, "--connection", databaseUrl!, "--schema", schema]);
      expect(submitted.status, submitted.stderr).toBe(0);
      const runId = /^queued (run_[0-9a-f]{16}) for the support-desk agent/m.exec(
        submitted.stdout,
      )?.[1];
      expect(runId, submitted.stdout).toBeDefined();
      runIds.push(runId!);
    }
    for (let index = 2; index < RUNS; index += 1)
      runIds.push((await submitRun(target(), task)).runId);

    // Kill the first worker while it holds runs (claimed, slice not reported).
    let held = new Map<string, number>();
    await waitUntil(
      "the first worker to hold a run",
      async () => {
        held = inFlight(first!);
        return held.size > 0;
      },
      20_000,
    );
    first!.child.kill("SIGKILL");
    expect((await first!.exited).signal).toBe("SIGKILL");

    await waitUntil(
      "every run to complete",
      async () =>
        (await store.list({ status: "completed" })).filter((summary) =>
          runIds.includes(summary.runId),
        ).length === RUNS,
      40_000,
    );

    for (const runId of runIds) {
      const events = await store.read(runId);
      expect(events.filter((event) => event.type === "run-start")).toHaveLength(1);
      const ends = events.filter((event) => event.type === "run-end");
      expect(ends).toHaveLength(1);
      expect(ends[0]).toMatchObject({ status: "completed" });
      expect(events.at(-1)?.type).toBe("run-end");
    }
    // Each run that the dead worker held was taken over: written to under a newer claim,
    // which the surviving worker announced.
    for (const [runId, epoch] of held) {
      const rows = await query(
        `SELECT max(epoch)::int AS epoch FROM "${schema}".events WHERE run_id = $1`,
        [runId],
      );
      expect(rows[0]!.epoch).toBeGreaterThan(epoch);
      expect(second!.output()).toMatch(new RegExp(`slice ${runId}: claimed \\(epoch \\d+\\)`));
    }

    // The outside world: one refund per run, whichever worker paid it; no email left.
    const ledger = await query(
      `SELECT kind, run_id, payload FROM "${schema}".demo_ledger WHERE run_id = ANY($1)`,
      [runIds],
    );
    for (const runId of runIds)
      expect(ledger.filter((row) => row.run_id === runId && row.kind === "refund")).toHaveLength(1);
    expect(ledger.filter((row) => row.kind === "email")).toEqual([]);
    for (const row of ledger)
      expect(JSON.parse(row.payload as string)).toMatchObject({ amount: 89.99 });

    // PII: the log holds tokens only, and each run's vault in PostgreSQL reveals every one.
    for (const runId of runIds) {
      const bodies = (
        await query(`SELECT body FROM "${schema}".events WHERE run_id = $1`, [runId])
      ).map((row) => row.body as string);
      const text = bodies.join("\n").toLowerCase();
      for (const value of sensitive) expect(text).not.toContain(value.toLowerCase());
      const tokens = new Set(bodies.join("\n").match(/<[A-Z_]+_\d+>/g) ?? []);
      expect(tokens.size).toBeGreaterThan(0);
      const lines = (
        await query(`SELECT entry FROM "${schema}".vault_entries WHERE run_id = $1 ORDER BY seq`, [
          runId,
        ])
      ).map((row) => row.entry as string);
      // The table holds sealed values only; the workers' keyring opens them.
      for (const value of sensitive) expect(lines.join("\n")).not.toContain(value);
      const vault = await postgresRunVault({
        keyring: createKeyring({
          keys: vaultKeys(".loopguard/vault"),
          store: postgresSubjectKeyStore(await store.pool(), schema),
        }),
        runId,
        lines,
        onSealed: () => undefined,
      });
      for (const token of tokens) {
        const value = vault.reveal(token);
        expect(value).not.toBe(token);
        expect(typeof value).toBe("string");
      }
    }
  }, 300_000);

  it("halts a run at its first tool call once a freeze is older than the cache window", async () => {
    const alive = (candidate: Worker) =>
      candidate.child.exitCode === null && candidate.child.signalCode === null;
    const worker = workers.find(alive)!;
    const freezes = postgresFreezeStore({ connectionString: databaseUrl!, schema, max: 1 });
    await freezes.freeze({ reason: "refunds misbehaving", by: "oncall" });
    // The workers cache the freeze for 250 ms.
    await new Promise((resolveWait) => setTimeout(resolveWait, 300));
    const { runId } = await submitRun(target(), task);
    await waitUntil(
      "the frozen run to stop",
      async () => (await store.read(runId)).some((event) => event.type === "run-end"),
      20_000,
    );
    const events = await store.read(runId);
    const refusals = events.filter((event) => event.type === "tool-call-refusal");
    expect(refusals.length).toBeGreaterThan(0);
    expect(JSON.stringify(refusals[0])).toContain("kill_switch");
    expect(events.some((event) => event.type === "tool-call-result")).toBe(false);
    expect(await query(`SELECT 1 FROM "${schema}".demo_ledger WHERE run_id = $1`, [runId])).toEqual(
      [],
    );
    await freezes.unfreeze({ by: "oncall" });
    await freezes.close();
    worker.child.kill("SIGTERM");
    expect((await worker.exited).code).toBe(0);
    expect(worker.output()).toContain("stopping: waiting for slices in flight");
  }, 40_000);
});
