// Throughput and resume benchmark of the event stores, against the physical limit of the same
// disk measured in the same run: a synchronous loop of write + fdatasync on one file (the
// disk's limit for one writer; it blocks its thread, which a store must not), and the same loop
// through fs/promises on as many files as the case has runs. Run with
// `pnpm --filter @loopguard/checkpoint bench` (it builds first). Prints figures and ratios;
// asserts nothing about time. BENCH_SECONDS sets each measurement's length; BENCH_ONLY=chain
// runs only the hash chain's on/off comparison.
import { closeSync, fdatasyncSync, openSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { foldRun } from "@loopguard/core/plugin";
import { jsonlEventStore, sqliteEventStore } from "../dist/index.js";
import { scratchDirs, take, toolResult, toolRunLog } from "./bench-events.mjs";

const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const durationMs = seconds * 1000;
const base = process.env.BENCH_DIR ?? tmpdir();
const { newDir, removeAll } = scratchDirs(base, "bench");

/** A realistic event: a tool result of about 500 bytes once serialised. */
const event = (index) =>
  toolResult(
    `toolu_${index}`,
    JSON.stringify({
      order_id: "A1001",
      status: "delivered",
      total: 89.99,
      items: ["kettle", "mug"],
      note: "x".repeat(240),
    }),
    Date.now(),
  );
const lineBytes = Buffer.byteLength(`${JSON.stringify({ seq: 123456, ...event(123456) })}\n`);

/** writeSync + fdatasyncSync of one line at a time on one file: one writer's limit. */
function syncLoop() {
  const dir = newDir("sync");
  const line = Buffer.alloc(lineBytes, 0x61);
  line[line.length - 1] = 0x0a;
  const fd = openSync(join(dir, "sync.jsonl"), "a");
  let count = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  while (performance.now() < deadline) {
    writeSync(fd, line);
    fdatasyncSync(fd);
    count += 1;
  }
  closeSync(fd);
  return count / ((performance.now() - started) / 1000);
}

/** write + fdatasync through fs/promises, one line at a time, on `files` files at once. */
async function plainLoop(files) {
  const dir = newDir("plain");
  const line = Buffer.alloc(lineBytes, 0x61);
  line[line.length - 1] = 0x0a;
  let count = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: files }, async (_, file) => {
      const handle = await open(join(dir, `plain-${file}.jsonl`), "a");
      while (performance.now() < deadline) {
        await handle.write(line);
        await handle.datasync();
        count += 1;
      }
      await handle.close();
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

/** `runs` writers at once, each appending one event at a time and awaiting it (as the agent does). */
async function storeLoop(makeStore, runs) {
  const store = makeStore();
  let count = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: runs }, async (_, run) => {
      const runId = `run_bench_${run}`;
      let seq = 0;
      while (performance.now() < deadline) {
        await store.append(runId, [event(seq)], { expectedSeq: seq });
        seq += 1;
        count += 1;
      }
    }),
  );
  const rate = count / ((performance.now() - started) / 1000);
  await store.close();
  return rate;
}

/** One run, 64 appends in flight at once: group commit within a file. */
async function storePipelined(makeStore) {
  const store = makeStore();
  const inFlight = new Set();
  let seq = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  while (performance.now() < deadline) {
    while (inFlight.size < 64) {
      const promise = store
        .append("run_pipelined", [event(seq)], { expectedSeq: seq })
        .then(() => inFlight.delete(promise));
      inFlight.add(promise);
      seq += 1;
    }
    await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  const rate = seq / ((performance.now() - started) / 1000);
  await store.close();
  return rate;
}

/** A run of `count` events that folds: start, then model request, response (one tool call), intent and result per step. */
function runLog(runId, count) {
  const steps = toolRunLog(runId, { responseText: "Checking.", resultContent: event(0).content });
  return [...take(steps, count)];
}

/** Milliseconds to read a run of `count` events in a fresh store and fold it. */
async function resumeTime(makeStore, count) {
  const writer = makeStore();
  const events = runLog("run_resume", count);
  for (let index = 0; index < events.length; index += 2000) {
    await writer.append("run_resume", events.slice(index, index + 2000), { expectedSeq: index });
  }
  await writer.close();
  const reader = makeStore();
  const started = performance.now();
  const read = await reader.read("run_resume");
  const fold = foldRun(read);
  const elapsed = performance.now() - started;
  if (read.length !== count || fold.nextSeq !== count)
    throw new Error(`resume read ${read.length} events`);
  await reader.close();
  return elapsed;
}

const fixed = (value, digits = 0) => value.toFixed(digits).padStart(8);

// A fresh directory or database per measurement.
const jsonl = () => jsonlEventStore({ dir: newDir("jsonl") });
const sqlite = () => sqliteEventStore({ path: join(newDir("sqlite"), "runs.db") });

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(
  `event stores: ${rounds} rounds of ${seconds} s per case, ${lineBytes}-byte events, Node ${process.version}, UV_THREADPOOL_SIZE ${process.env.UV_THREADPOOL_SIZE ?? "4 (default)"}, dir ${base}`,
);
// The disk's speed drifts from second to second on shared machines: each round measures the
// limit right before the store, and the ratio is the median of the rounds' ratios.
const cases = [
  ["jsonl: 1 run, 1 event per append", () => storeLoop(jsonl, 1), () => plainLoop(1)],
  ["jsonl: 100 runs at once", () => storeLoop(jsonl, 100), () => plainLoop(100)],
  ["jsonl: 1 run, 64 appends in flight", () => storePipelined(jsonl), () => plainLoop(1)],
  ["sqlite: 1 run, 1 event per append", () => storeLoop(sqlite, 1), () => plainLoop(1)],
  ["sqlite: 100 runs at once", () => storeLoop(sqlite, 100), () => plainLoop(100)],
  ["sqlite: 1 run, 64 appends in flight", () => storePipelined(sqlite), () => plainLoop(1)],
];
console.log(
  "\nthroughput (events/s; every append durable before it resolves), against a synchronous write+fdatasync loop on one file and the fs/promises loop on as many files",
);
console.log(
  `${"case".padEnd(40)} ${"events/s".padStart(8)} ${"sync".padStart(8)} ${"ratio".padStart(7)} ${"promises".padStart(8)} ${"ratio".padStart(7)}`,
);
// BENCH_ONLY=chain runs only the hash chain's section below.
const only = process.env.BENCH_ONLY;
for (const [label, measure, limit] of only ? [] : cases) {
  const rates = [];
  const syncRates = [];
  const limits = [];
  const syncRatios = [];
  const ratios = [];
  for (let round = 0; round < rounds; round += 1) {
    const sync = syncLoop();
    const physical = await limit();
    const rate = await measure();
    rates.push(rate);
    syncRates.push(sync);
    limits.push(physical);
    syncRatios.push(rate / sync);
    ratios.push(rate / physical);
  }
  console.log(
    `${label.padEnd(40)} ${fixed(median(rates))} ${fixed(median(syncRates))} ${median(syncRatios).toFixed(2).padStart(6)}x ${fixed(median(limits))} ${median(ratios).toFixed(2).padStart(6)}x`,
  );
}

console.log("\nresume (read the log in a fresh store + foldRun), ms");
console.log(`${"events".padEnd(10)} ${"jsonl".padStart(8)} ${"sqlite".padStart(8)}`);
for (const count of only ? [] : [1_000, 10_000, 100_000]) {
  const jsonlResume = newDir(`resume-jsonl-${count}`);
  const sqliteResume = newDir(`resume-sqlite-${count}`);
  const jsonlMs = await resumeTime(() => jsonlEventStore({ dir: jsonlResume }), count);
  const sqliteMs = await resumeTime(
    () => sqliteEventStore({ path: join(sqliteResume, "runs.db") }),
    count,
  );
  console.log(`${String(count).padEnd(10)} ${fixed(jsonlMs, 1)} ${fixed(sqliteMs, 1)}`);
}

// The hash chain's cost: the same cases with the chain on and off, rounds alternating so both
// see the same disk. The budget is 5% on this bench.
console.log(
  "\nhash chain (SHA-256 link per event): the same case with hashChain on and off, median of alternating rounds",
);
console.log(
  `${"case".padEnd(40)} ${"on".padStart(8)} ${"off".padStart(8)} ${"on/off".padStart(7)}`,
);
const chainCases = [
  [
    "jsonl: 100 runs at once (events/s)",
    (hashChain) => storeLoop(() => jsonlEventStore({ dir: newDir("chain"), hashChain }), 100),
  ],
  [
    "jsonl: 1 run, 64 in flight (events/s)",
    (hashChain) => storePipelined(() => jsonlEventStore({ dir: newDir("chain"), hashChain })),
  ],
  [
    "sqlite: 100 runs at once (events/s)",
    (hashChain) =>
      storeLoop(() => sqliteEventStore({ path: join(newDir("chain"), "runs.db"), hashChain }), 100),
  ],
  [
    "jsonl: resume 100,000 events (ms)",
    (hashChain) => {
      const dir = newDir("chain-resume");
      return resumeTime(() => jsonlEventStore({ dir, hashChain }), 100_000);
    },
  ],
  [
    "sqlite: resume 100,000 events (ms)",
    (hashChain) => {
      const dir = newDir("chain-resume");
      return resumeTime(() => sqliteEventStore({ path: join(dir, "runs.db"), hashChain }), 100_000);
    },
  ],
];
for (const [label, measure] of chainCases) {
  const on = [];
  const off = [];
  for (let round = 0; round < rounds; round += 1) {
    on.push(await measure(true));
    off.push(await measure(false));
  }
  console.log(
    `${label.padEnd(40)} ${fixed(median(on), label.endsWith("(ms)") ? 1 : 0)} ${fixed(median(off), label.endsWith("(ms)") ? 1 : 0)} ${(median(on) / median(off)).toFixed(3).padStart(6)}x`,
  );
}

removeAll();
