// Throughput of the PostgreSQL workers with the fleet limits on beside off: trivial runs per
// second with 1, 2 and 4 worker processes. "On" is tenantBudget (maxUsd and maxRuns per tenant
// and day, on postgresLimitStore: a reserve at run start, a reserve and a settle per model
// step) and tenantConcurrency 4 (a slot taken and released per slice), runs spread over 20
// tenants. Prints figures; asserts nothing. Run alone or at the end of bench/workers.mjs:
//
//   eval "$(scripts/postgres.sh start)"
//   node packages/checkpoint/bench/workers-limits.mjs      # RUNS=400 CONCURRENCY=4 ROUNDS=1
//
// Then fairness (FAIRNESS=0 skips it): 1,000 runs of 6 model steps (150 ms each, slices of
// 500 ms, so every run is re-queued and about all of them are in progress at once) on 4
// processes of 8 slots, 800 from one big tenant submitted first and 10 from each of 20 small
// tenants; when the small tenants' runs finish, limits off (first come, first served) beside
// on (tenantConcurrency 16: the big tenant may use half the fleet).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { databaseUrlOrExit, spawnWorker, steadyRate } from "./fleet.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const url = databaseUrlOrExit();
const RUNS = Number(process.env.RUNS ?? 400);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const TENANTS = 20;

for (const project of [
  "packages/core/tsconfig.build.json",
  "packages/policy/tsconfig.build.json",
  "packages/checkpoint/test/pg/tsconfig.workers.json",
  "packages/checkpoint/test/pg/tsconfig.limits.json",
])
  execFileSync("npx", ["tsc", "-p", project], { cwd: repo, stdio: "inherit" });
const { postgresEventStore } = await import("../dist/postgres-event-store.js");
const { submitRun } = await import("../dist/worker-submit-run.js");
const { openQueue, resolveQueueOptions } = await import("../dist/worker-queue.js");
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function startWorker(schema, limits, extra = {}) {
  return spawnWorker(resolve(here, "limits-worker.mjs"), {
    LG_SCHEMA: schema,
    LIMITS: limits ? "1" : "0",
    CONCURRENCY: String(CONCURRENCY),
    ...extra,
  });
}

async function throughput(processes, limits) {
  const schema = `lg_bench_limits_${randomBytes(3).toString("hex")}`;
  const store = postgresEventStore({ connectionString: url, schema, max: 4 });
  const pool = await store.pool();
  await store.migrate();
  const settings = resolveQueueOptions({ leaseMs: 3000 }, schema, "bench");
  const boss = await openQueue(pool, settings, { supervise: false }, "bench");
  for (let index = 0; index < RUNS; index += 1)
    await submitRun({ boss, leaseMs: 3000 }, `trivial run ${index}`, {
      runId: `t${index}`,
      tenant: `tenant-${index % TENANTS}`,
    });
  const workers = Array.from({ length: processes }, () => startWorker(schema, limits));
  await Promise.all(workers.map((worker) => worker.ready));
  const rate = await steadyRate(pool, schema, RUNS);
  let spent;
  if (limits) {
    const { rows } = await pool.query(
      `SELECT coalesce(sum(settled), 0) AS usd, coalesce(sum(reserved), 0) AS held FROM "${schema}".limit_counters WHERE key LIKE 'tenant:%:usd'`,
    );
    spent = { usd: Number(rows[0].usd), held: Number(rows[0].held) };
  }
  const errors = workers.flatMap((worker) => worker.errors);
  for (const worker of workers) worker.child.kill("SIGKILL");
  await boss.stop({ graceful: false, close: false, wait: true });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`);
  await store.close();
  return { rate, spent, errors: errors.length };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rows = [];
// THROUGHPUT=0 skips this part (fairness only).
for (const processes of process.env.THROUGHPUT === "0" ? [] : [1, 2, 4]) {
  const off = [];
  const on = [];
  let last;
  // Off and on in turns, so a busy moment of the machine lands on both.
  for (let round = 0; round < ROUNDS; round += 1) {
    off.push((await throughput(processes, false)).rate);
    last = await throughput(processes, true);
    on.push(last.rate);
  }
  const row = {
    processes,
    off: median(off),
    on: median(on),
    spent: last.spent,
    errors: last.errors,
  };
  rows.push(row);
  console.log(
    `[bench] ${processes} worker process${processes === 1 ? "" : "es"} x ${CONCURRENCY} slots: limits off ${row.off.toFixed(0)} runs/s, on ${row.on.toFixed(0)} runs/s (${((row.on / row.off) * 100).toFixed(0)} %)`,
  );
}
if (rows.length > 0) {
  console.log(
    `\n| worker processes | limits off: trivial runs/s | limits on: trivial runs/s | on / off |\n|---|---|---|---|`,
  );
  for (const row of rows)
    console.log(
      `| ${row.processes} | ${row.off.toFixed(0)} | ${row.on.toFixed(0)} | ${((row.on / row.off) * 100).toFixed(0)} % |`,
    );
  const last = rows.at(-1);
  console.log(
    `\n(${RUNS} runs per measurement over ${TENANTS} tenants, ${ROUNDS} round(s), median; limits on = tenantBudget + tenantConcurrency 4 on postgresLimitStore; after the last run: $${last.spent?.usd.toFixed(6)} settled, $${last.spent?.held.toFixed(6)} held, ${last.errors} worker errors)`,
  );
}

async function fairness(limits) {
  const schema = `lg_bench_fair_${randomBytes(3).toString("hex")}`;
  const store = postgresEventStore({ connectionString: url, schema, max: 4 });
  const pool = await store.pool();
  await store.migrate();
  const settings = resolveQueueOptions({ leaseMs: 3000 }, schema, "bench");
  const boss = await openQueue(pool, settings, { supervise: false }, "bench");
  const tenantOf = new Map();
  const submit = async (runId, tenant) => {
    tenantOf.set(runId, tenant);
    await submitRun({ boss, leaseMs: 3000 }, `fair run ${runId}`, { runId, tenant });
  };
  for (let index = 0; index < 800; index += 1) await submit(`big-${index}`, "big");
  for (let small = 0; small < 20; small += 1)
    for (let index = 0; index < 10; index += 1)
      await submit(`s${small}-${index}`, `small-${small}`);
  const extra = {
    STEPS: "6",
    STEP_MS: "150",
    SLICE_MS: "500",
    CONCURRENCY: "8",
    TENANT_CONCURRENCY: "16",
  };
  const workers = Array.from({ length: 4 }, () => startWorker(schema, limits, extra));
  await Promise.all(workers.map((worker) => worker.ready));
  const started = Date.now();
  let peak = 0;
  for (;;) {
    const { rows } = await pool.query(
      `SELECT count(*) FILTER (WHERE status = 'completed')::int AS done, count(*) FILTER (WHERE status = 'running')::int AS running FROM "${schema}".runs`,
    );
    peak = Math.max(peak, rows[0].running);
    if (rows[0].done >= 1000) break;
    await sleep(100);
  }
  const { rows } = await pool.query(
    `SELECT run_id, updated_at FROM "${schema}".runs WHERE status = 'completed'`,
  );
  for (const worker of workers) worker.child.kill("SIGKILL");
  await boss.stop({ graceful: false, close: false, wait: true });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`);
  await store.close();
  const lastOf = new Map();
  for (const row of rows) {
    const tenant = tenantOf.get(row.run_id);
    lastOf.set(
      tenant,
      Math.max(lastOf.get(tenant) ?? 0, (Number(row.updated_at) - started) / 1000),
    );
  }
  const smallLast = [...lastOf]
    .filter(([tenant]) => tenant !== "big")
    .map(([, seconds]) => seconds);
  return {
    total: Math.max(...lastOf.values()),
    big: lastOf.get("big"),
    smallMedian: median(smallLast),
    smallMax: Math.max(...smallLast),
    peak,
  };
}

if (process.env.FAIRNESS !== "0") {
  const off = await fairness(false);
  const on = await fairness(true);
  console.log(
    "\n| 1,000 runs, 4 processes x 8 slots | peak runs in progress | big tenant's last run done | small tenants' last run done: median | max |\n|---|---|---|---|---|",
  );
  for (const [name, result] of [
    ["limits off (FIFO)", off],
    ["tenantConcurrency 16", on],
  ])
    console.log(
      `| ${name} | ${result.peak} | ${result.big.toFixed(1)} s | ${result.smallMedian.toFixed(1)} s | ${result.smallMax.toFixed(1)} s |`,
    );
}
