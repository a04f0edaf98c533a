// The hash chain's CPU cost on appends, with the disk taken out: 10 000 appends (50 runs of
// 200, awaited one by one) on tmpfs (/dev/shm, where fsync costs nothing), CPU time (event loop
// and thread pool) with hashChain on and off, median of 5 alternating rounds. This is the
// chain's worst case: on a real disk each durable append costs a sync the chain does not touch.
//
//   pnpm --filter @loopguard/core build && pnpm --filter @loopguard/checkpoint build
//   node bench/chain-cpu.mjs
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore, sqliteEventStore } from "../dist/index.js";
import { scratchDirs, toolResult } from "./bench-events.mjs";

const base = process.env.BENCH_DIR ?? (existsSync("/dev/shm") ? "/dev/shm" : tmpdir());
const { newDir, removeAll } = scratchDirs(base, "chain-cpu");
const event = (index) =>
  toolResult(
    `toolu_${index}`,
    JSON.stringify({ order_id: "A1001", note: "x".repeat(300) }),
    Date.now(),
  );

async function cpuOf(store) {
  const started = process.cpuUsage();
  await Promise.all(
    Array.from({ length: 50 }, async (_, run) => {
      for (let seq = 0; seq < 200; seq += 1)
        await store.append(`r${run}`, [event(seq)], { expectedSeq: seq });
    }),
  );
  const used = process.cpuUsage(started);
  await store.close();
  return (used.user + used.system) / 1000;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`hash chain CPU on 10 000 appends (logs in ${base}, Node ${process.version})`);
for (const [name, make] of [
  ["jsonl", (hashChain) => jsonlEventStore({ dir: newDir(), hashChain })],
  ["sqlite", (hashChain) => sqliteEventStore({ path: join(newDir(), "runs.db"), hashChain })],
]) {
  const on = [];
  const off = [];
  for (let round = 0; round < 5; round += 1) {
    on.push(await cpuOf(make(true)));
    off.push(await cpuOf(make(false)));
  }
  console.log(
    `${name.padEnd(7)} on ${median(on).toFixed(0).padStart(5)} ms  off ${median(off).toFixed(0).padStart(5)} ms  ${(median(on) / median(off)).toFixed(3)}x  (+${(((median(on) - median(off)) / 10_000) * 1000).toFixed(1)} us per append)`,
  );
}
removeAll();
