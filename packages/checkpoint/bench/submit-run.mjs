#!/usr/bin/env node
// What one submitRun call costs over a connection string, the way a web server submits runs:
// `calls` calls in a row with the same { connectionString } against the real PostgreSQL
// (DATABASE_URL; `eval "$(scripts/postgres.sh start)"`), one schema made for the run and dropped
// after. Prints the first call (it opens the pool, migrates the store, starts pg-boss) and the
// median and p95 of the rest, which reuse those connections. Build first:
// pnpm --filter @loopguard/core build && pnpm --filter @loopguard/checkpoint build
// Run: node bench/submit-run.mjs [calls]
import { randomBytes } from "node:crypto";
import pg from "pg";
import { closeSubmitConnections, submitRun } from "../dist/index.js";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('DATABASE_URL is not set: eval "$(scripts/postgres.sh start)"');
  process.exit(1);
}
const calls = Number(process.argv[2] ?? 200);
const schema = `lg_bench_submit_${randomBytes(3).toString("hex")}`;
const target = { connectionString: url, schema };
const times = [];
for (let index = 0; index < calls; index += 1) {
  const started = performance.now();
  await submitRun(target, `task ${index}`);
  times.push(performance.now() - started);
}
await closeSubmitConnections();
const rest = times.slice(1).sort((a, b) => a - b);
const at = (q) => rest[Math.min(rest.length - 1, Math.floor(q * rest.length))];
console.log(
  JSON.stringify({
    calls,
    firstMs: +times[0].toFixed(1),
    medianMs: +at(0.5).toFixed(2),
    p95Ms: +at(0.95).toFixed(2),
  }),
);
const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`);
await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await client.end();
