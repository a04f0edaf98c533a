// Limits off, limits on with this build, and limits on with another build of the package
// (BEFORE_DIST: its dist directory, e.g. an older commit built aside), one-step runs, in a
// rotating order so a busy moment of the machine does not always land on one of them. Prints
// medians and every round; asserts nothing. Build this package first (workers-limits.mjs does).
//
//   git archive <commit> packages/checkpoint/src | tar -x -C /tmp/before --strip-components=2
//   ln -s "$PWD/packages/checkpoint/node_modules" /tmp/before/node_modules
//   (a tsconfig there: rootDir src, outDir dist, extends this repo's tsconfig.base.json) && npx tsc -p /tmp/before
//   BEFORE_DIST=/tmp/before/dist ROUNDS=5 node packages/checkpoint/bench/workers-limits-compare.mjs
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { databaseUrlOrExit, spawnWorker, steadyRate } from "./fleet.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const url = databaseUrlOrExit();
const RUNS = Number(process.env.RUNS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TENANTS = 20;
const ours = resolve(here, "../dist");
const before = process.env.BEFORE_DIST;
const modes = before ? ["off", "on", "before"] : ["off", "on"];

async function throughput(processes, mode) {
  const dist = mode === "before" ? before : ours;
  const { postgresEventStore } = await import(`${dist}/postgres-event-store.js`);
  const { submitRun } = await import(`${dist}/worker-submit-run.js`);
  const { openQueue, resolveQueueOptions } = await import(`${dist}/worker-queue.js`);
  const schema = `lg_bench_cmp_${randomBytes(3).toString("hex")}`;
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
  const workers = Array.from({ length: processes }, () =>
    spawnWorker(resolve(here, "limits-worker.mjs"), {
      LG_SCHEMA: schema,
      LG_DIST: dist,
      LIMITS: mode === "off" ? "0" : "1",
      CONCURRENCY: "4",
    }),
  );
  await Promise.all(workers.map((worker) => worker.ready));
  const rate = await steadyRate(pool, schema, RUNS);
  const errors = workers.flatMap((worker) => worker.errors).length;
  for (const worker of workers) worker.child.kill("SIGKILL");
  await boss.stop({ graceful: false, close: false, wait: true });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`);
  await store.close();
  return { rate, errors };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const processes of [1, 2, 4]) {
  const rates = Object.fromEntries(modes.map((mode) => [mode, []]));
  const loads = [];
  let errors = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const turn = round % modes.length;
    for (const mode of [...modes.slice(turn), ...modes.slice(0, turn)]) {
      const result = await throughput(processes, mode);
      rates[mode].push(result.rate);
      errors += result.errors;
      loads.push(loadavg()[0]);
    }
  }
  const off = median(rates.off);
  const cells = modes.map(
    (mode) =>
      `${mode} ${median(rates[mode]).toFixed(1)} runs/s (${((median(rates[mode]) / off) * 100).toFixed(0)} %; rounds ${rates[mode].map((rate) => rate.toFixed(0)).join(", ")})`,
  );
  console.log(
    `[compare] ${processes} x 4 slots: ${cells.join("; ")}; load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}; worker errors ${errors}`,
  );
}
