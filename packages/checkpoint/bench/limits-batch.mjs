#!/usr/bin/env node
// What a batch saves on PostgreSQL: a new run's start and first step as two reserves (two round
// trips) beside one batch of the same two reserves (one round trip), against the real server
// (DATABASE_URL; `eval "$(scripts/postgres.sh start)"`), `N` of each, alternating in rounds so
// load hits both alike; one schema made for the run and dropped after. Build first:
// pnpm --filter @loopguard/core build && pnpm --filter @loopguard/checkpoint build
// Run: node bench/limits-batch.mjs [N]. Prints per-pair medians and their ratio.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { postgresLimitStore } from "../dist/index.js";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('DATABASE_URL is not set: eval "$(scripts/postgres.sh start)"');
  process.exit(1);
}
const n = Number(process.argv[2] ?? 1_000);
const schema = `lg_bench_batch_${randomBytes(3).toString("hex")}`;
const store = postgresLimitStore({ connectionString: url, schema, max: 2 });
const day = { cap: 1e12, windowStart: Date.UTC(2026, 11, 1), windowMs: 86_400_000 };
const now = Date.UTC(2026, 11, 1, 12);
const single = [];
const batched = [];
await store.reserve("warm", day, 1, { id: "warm", now });
for (let round = 0; round < 10; round += 1) {
  for (let index = 0; index < n / 10; index += 1) {
    const id = `${round}:${index}`;
    let started = performance.now();
    await store.reserve(`tenant:t${index % 20}:runs`, day, 1, { id: `s${id}`, now });
    await store.reserve(`tenant:t${index % 20}:usd`, day, 0.01, { id: `s${id}:1`, now });
    single.push(performance.now() - started);
    started = performance.now();
    await store.batch(
      [
        {
          type: "reserve",
          key: `tenant:t${index % 20}:runs`,
          counter: day,
          amount: 1,
          id: `b${id}`,
        },
        {
          type: "reserve",
          key: `tenant:t${index % 20}:usd`,
          counter: day,
          amount: 0.01,
          id: `b${id}:1`,
        },
      ],
      { now },
    );
    batched.push(performance.now() - started);
  }
}
await store.close();
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const [a, b] = [median(single), median(batched)];
console.log(
  JSON.stringify({
    pairs: n,
    twoReservesMedianMs: +a.toFixed(3),
    oneBatchMedianMs: +b.toFixed(3),
    batchOverTwo: +(b / a).toFixed(2),
  }),
);
const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await client.end();
