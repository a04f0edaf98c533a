/**
 * `submitRun` across a real PostgreSQL restart: a server of this test's own (not the shared
 * one) is stopped with `pg_ctl stop -m fast` (its connections get 57P01, new ones are refused)
 * while a submission is under way, and started again; the call must end with the run queued
 * exactly once. Needs PostgreSQL 15's binaries and root (the server runs as the `postgres`
 * user through scripts/postgres.sh); skipped with a message otherwise.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeSubmitConnections } from "../../src/submit-connections.js";
import { submitRun } from "../../src/worker-submit-run.js";

const here = dirname(fileURLToPath(import.meta.url));
const script = resolve(here, "../../../../scripts/postgres.sh");
const bin = "/usr/lib/postgresql/15/bin";
const port = 54_398;
const data = `/tmp/loopguard-pg-${port}/data`;
const url = `postgres://postgres@127.0.0.1:${port}/loopguard_test`;
const isRoot = process.getuid?.() === 0;
const available = existsSync(`${bin}/pg_ctl`) && isRoot && existsSync("/usr/sbin/runuser");
if (!available)
  console.warn(
    `\n[checkpoint tests] the submitRun restart test is SKIPPED: it needs ${bin}/pg_ctl and root (to run its own server as the postgres user through scripts/postgres.sh on port ${port})\n`,
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
    { stdio: ["ignore", "pipe", "pipe"] },
  );

describe.skipIf(!available)("submitRun across a real PostgreSQL restart", () => {
  const schema = "lg_submit_restart";

  beforeAll(() => {
    server("stop");
    server("start");
  }, 180_000);

  afterAll(async () => {
    await closeSubmitConnections();
    server("stop");
  }, 120_000);

  it("the server stops mid-submit and starts again: the call retries and the run is queued exactly once", async () => {
    // Far above any machine's pace: the restart is over long before the retries would be.
    const target = {
      connectionString: url,
      schema,
      retry: { maxAttempts: 100, baseDelayMs: 50, maxDelayMs: 1_000 },
    };
    const warm = await submitRun(target, "warm up", { runId: "run_before_restart" });
    expect(warm.jobId).not.toBeNull();
    stopKeepingData();
    // The pool's connections were terminated by the server (57P01); new ones are refused.
    const pending = submitRun(target, "Refund A1", { runId: "run_across_restart" });
    await new Promise((resolveWait) => setTimeout(resolveWait, 500));
    server("start");
    const submitted = await pending;
    expect(submitted.jobId).not.toBeNull();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT id FROM "${schema}_boss".job WHERE singleton_key = $1`,
        ["run_across_restart"],
      );
      expect(rows.map((row) => String(row.id))).toEqual([submitted.jobId]);
    } finally {
      await client.end();
    }
  }, 180_000);
});
