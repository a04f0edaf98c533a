// Throughput of the PostgreSQL workers: trivial runs per second with 1, 2 and 4 worker
// processes on this machine, and the time from a worker's death (SIGKILL) to another worker's
// takeover of its run. Prints figures; asserts nothing.
//
//   eval "$(scripts/postgres.sh start)"
//   node packages/checkpoint/bench/workers.mjs            # RUNS=400 CONCURRENCY=4 to change
//
// A trivial run is one model step (a scripted model, no delay) that ends the run: run-start,
// model-request, model-response, run-end, i.e. one job, one claim-and-read, four appends (core
// awaits each event before the next), one settling transaction. The workers count their
// statements by kind (COUNT_QUERIES=1), and /proc gives CPU per run of the workers and of
// every PostgreSQL process, to show where the time goes.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { databaseUrlOrExit, spawnWorker, steadyRate } from "./fleet.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const url = databaseUrlOrExit();
const RUNS = Number(process.env.RUNS ?? 400);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);

execFileSync("npx", ["tsc", "-p", "packages/core/tsconfig.build.json"], {
  cwd: repo,
  stdio: "inherit",
});
execFileSync("npx", ["tsc", "-p", "packages/checkpoint/test/pg/tsconfig.workers.json"], {
  cwd: repo,
  stdio: "inherit",
});
const { postgresEventStore } = await import("../dist/postgres-event-store.js");
const { submitRun } = await import("../dist/worker-submit-run.js");
const { openQueue, resolveQueueOptions } = await import("../dist/worker-queue.js");
const { createSideEffectTables } = await import("../test/pg/fixtures/agent.mjs");

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function startWorker(schema, name, extra = {}) {
  return spawnWorker(
    resolve(here, "../test/pg/fixtures/worker-process.mjs"),
    {
      LG_SCHEMA: schema,
      WORKER_NAME: name,
      CONCURRENCY: String(CONCURRENCY),
      SLICE_MS: "1000",
      LEASE_MS: "3000",
      POLLING_MS: "500",
      QUIET: "1",
      COUNT_QUERIES: "1",
      ...extra,
    },
    `worker ${name}`,
  );
}

async function setup(schema) {
  const store = postgresEventStore({ connectionString: url, schema, max: 4 });
  const pool = await store.pool();
  await createSideEffectTables(pool, schema);
  const settings = resolveQueueOptions({ leaseMs: 3000 }, schema, "bench");
  const boss = await openQueue(pool, settings, { supervise: false }, "bench");
  return { store, pool, boss };
}

/** CPU seconds (user + system) of one process, from /proc (Linux), or 0. */
function cpuOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of every PostgreSQL server process on this machine. */
function postgresCpu() {
  let total = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, "utf8").trim() === "postgres") total += cpuOf(name);
    } catch {}
  }
  return total;
}

/** Stops the workers gracefully and sums the statements they counted, by kind. */
async function queriesOf(workers) {
  const total = {};
  await Promise.all(
    workers.map(async (worker) => {
      worker.child.kill("SIGTERM");
      for (let waited = 0; waited < 5000; waited += 20) {
        const line = worker.lines.find((candidate) => candidate.event === "queries");
        if (line) {
          for (const [kind, n] of Object.entries(line.counts)) total[kind] = (total[kind] ?? 0) + n;
          return;
        }
        await sleep(20);
      }
    }),
  );
  return total;
}

async function teardown(schema, { store, boss }, workers) {
  for (const worker of workers) worker.child.kill("SIGKILL");
  await boss.stop({ graceful: false, close: false, wait: true });
  const pool = await store.pool();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`);
  await store.close();
}

async function throughput(processes) {
  const schema = `lg_bench_${randomBytes(3).toString("hex")}`;
  const context = await setup(schema);
  for (let index = 0; index < RUNS; index += 1)
    await submitRun({ boss: context.boss, leaseMs: 3000 }, `trivial run ${index}`, {
      runId: `t${index}`,
    });
  const workers = Array.from({ length: processes }, (_, index) => startWorker(schema, `b${index}`));
  await Promise.all(workers.map((worker) => worker.ready));
  const databaseCpuBefore = postgresCpu();
  const rate = await steadyRate(context.pool, schema, RUNS);
  const workerCpu = workers.reduce((sum, worker) => sum + cpuOf(worker.child.pid), 0);
  const databaseCpu = postgresCpu() - databaseCpuBefore;
  const queries = await queriesOf(workers);
  await teardown(schema, context, workers);
  return {
    rate,
    workerCpuMs: (workerCpu / RUNS) * 1000,
    databaseCpuMs: (databaseCpu / RUNS) * 1000,
    queries,
  };
}

async function takeover() {
  const schema = `lg_bench_${randomBytes(3).toString("hex")}`;
  const context = await setup(schema);
  const extra = { QUIET: "0", STEP_DELAY_MS: "300", CONCURRENCY: "1" };
  const workers = [startWorker(schema, "a", extra), startWorker(schema, "b", extra)];
  await Promise.all(workers.map((worker) => worker.ready));
  await submitRun({ boss: context.boss, leaseMs: 3000 }, "charge order slow-1", {
    runId: "slow-1",
  });
  let claim;
  while (!claim) {
    claim = workers
      .flatMap((worker) => worker.lines)
      .find((line) => line.event === "claim" && line.runId === "slow-1");
    await sleep(5);
  }
  const victim = workers.find((worker) => worker.lines.includes(claim));
  const other = workers.find((worker) => worker !== victim);
  await sleep(200);
  const killedAt = Date.now();
  victim.child.kill("SIGKILL");
  let next;
  while (!next) {
    next = other.lines.find(
      (line) => line.event === "claim" && line.runId === "slow-1" && line.at >= killedAt,
    );
    await sleep(5);
  }
  await teardown(schema, context, workers);
  return next.at - killedAt;
}

const results = [];
for (const processes of [1, 2, 4]) {
  const result = await throughput(processes);
  results.push([processes, result]);
  console.log(
    `[bench] ${processes} worker process${processes === 1 ? "" : "es"} x ${CONCURRENCY} slots: ${result.rate.toFixed(0)} trivial runs/s`,
  );
}
const base = results[0][1].rate;
console.log(
  "\n| worker processes | trivial runs/s | vs 1 process | statements per run | CPU ms per run: workers | CPU ms per run: PostgreSQL |\n|---|---|---|---|---|---|",
);
for (const [processes, result] of results) {
  const statements = Object.entries(result.queries)
    .filter(([kind]) => kind !== "pool connect")
    .reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `| ${processes} | ${result.rate.toFixed(0)} | ${(result.rate / base).toFixed(2)}x | ${(statements / RUNS).toFixed(1)} | ${result.workerCpuMs.toFixed(2)} | ${result.databaseCpuMs.toFixed(2)} |`,
  );
}
console.log("\nStatements per run by kind (1 process):");
for (const [kind, n] of Object.entries(results[0][1].queries).sort((a, b) => b[1] - a[1]))
  if (n / RUNS >= 0.05) console.log(`  ${(n / RUNS).toFixed(2)}  ${kind}`);
const takeovers = [];
for (let round = 0; round < 3; round += 1) takeovers.push(await takeover());
console.log(
  `\n[bench] SIGKILL to takeover (lease 3 s, maintenance 1 s, polling 0.5 s): ${takeovers.map((ms) => `${ms} ms`).join(", ")}`,
);

// Limits on beside off, for 1, 2 and 4 processes (tenantBudget and tenantConcurrency on
// postgresLimitStore): bench/workers-limits.mjs, also runnable alone. BENCH_LIMITS=0 skips it.
if (process.env.BENCH_LIMITS !== "0") await import("./workers-limits.mjs");
