// Event-loop delay with the SQLite store committing on the main thread (better-sqlite3 is
// synchronous: each group commit's transaction and fsync block the loop) against the store's
// writer thread (the same commits in a worker_threads Worker), side by side in one run, in
// alternating rounds. Two cases:
//   - store only: BENCH_RUNS "runs" appending at once, each BENCH_APPENDS appends of one
//     ~500-byte event (the store's own cost, nothing else on the loop);
//   - agent runs: BENCH_RUNS concurrent agent runs in a child process (src/__fixtures__/many-runs.mjs,
//     one model call each, core's memory store as the no-disk baseline), as bench/many-runs.mjs.
// Each case runs twice: on this disk as it is, and with every fsync/fdatasync made
// BENCH_FSYNC_MS slower (default 10, a slow network volume) by a tiny LD_PRELOAD shim compiled
// with the system's C compiler (that row is skipped without one). The shim sleeps in the
// calling thread only, as a slow disk does. Each measurement runs in its own process.
// Prints loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution) p99 and max per round,
// the medians, and thread/main ratios. Asserts nothing about time.
//
//   pnpm --filter @loopguard/core build && pnpm --filter @loopguard/checkpoint build
//   node bench/sqlite-commit-thread.mjs    # BENCH_RUNS=2000 BENCH_APPENDS=5 BENCH_ROUNDS=3 BENCH_FSYNC_MS=10 BENCH_DIR=/tmp
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { sqliteEventStore } from "../dist/index.js";
import { toolResult } from "./bench-events.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const fixture = resolve(here, "../src/__fixtures__/many-runs.mjs");
const storeModule = pathToFileURL(resolve(here, "../dist/index.js")).href;
const runs = Number(process.env.BENCH_RUNS ?? 2_000);
const appends = Number(process.env.BENCH_APPENDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const base = process.env.BENCH_DIR ?? tmpdir();
const fsyncMs = Number(process.env.BENCH_FSYNC_MS ?? 10);
const variants = [
  { name: "main thread", options: { commitThread: false } },
  { name: "writer thread", options: {} },
];

const payload = JSON.stringify({ order_id: "A1001", status: "delivered", note: "x".repeat(400) });

/** `runs` runs appending at once through one store; the loop's delay while they do. */
async function storeOnly(options) {
  const dir = mkdtempSync(join(base, "lg-commit-thread-"));
  const store = sqliteEventStore({ path: join(dir, "runs.db"), ...options });
  await store.append("run_warm", [toolResult("toolu_warm", payload, Date.now())], {
    expectedSeq: 0,
  });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: runs }, async (_, run) => {
      for (let seq = 0; seq < appends; seq += 1) {
        const event = toolResult(`toolu_${run}_${seq}`, payload, Date.now());
        await store.append(`run_${run}`, [event], { expectedSeq: seq });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  const events = (await store.list({ limit: 1 }))[0]?.events;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  if (events !== appends) throw new Error(`expected ${appends} events per run, saw ${events}`);
  return {
    p99: delay.percentile(99) / 1e6,
    max: delay.max / 1e6,
    rate: (runs * appends) / seconds,
  };
}

/** The LD_PRELOAD shim that makes fsync and fdatasync `fsyncMs` slower, or undefined without a C compiler. */
function slowFsyncShim() {
  const dir = mkdtempSync(join(tmpdir(), "lg-slow-fsync-"));
  writeFileSync(
    join(dir, "slow-fsync.c"),
    `#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
static void wait_like_a_slow_disk(void) { const char *text = getenv("SLOW_FSYNC_US"); if (text) usleep((useconds_t)atoi(text)); }
int fsync(int fd) { wait_like_a_slow_disk(); return (int)syscall(SYS_fsync, fd); }
int fdatasync(int fd) { wait_like_a_slow_disk(); return (int)syscall(SYS_fdatasync, fd); }
`,
  );
  const compiled = spawnSync(
    "cc",
    ["-shared", "-fPIC", "-O2", "-o", join(dir, "slow-fsync.so"), join(dir, "slow-fsync.c")],
    { encoding: "utf8" },
  );
  return compiled.status === 0 ? join(dir, "slow-fsync.so") : undefined;
}

/** One store-only measurement in a child process (so the shim applies to it alone). */
function storeOnlyInChild(options, env) {
  const child = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), "--store-only", JSON.stringify(options)],
    {
      encoding: "utf8",
      env: { ...process.env, ...env },
    },
  );
  if (child.status !== 0)
    throw new Error(`store-only measurement failed: ${child.stderr.slice(0, 400)}`);
  return JSON.parse(child.stdout.trim().split("\n").at(-1));
}

/** `runs` agent runs at once in a child process on `kind`'s store. */
function agentRuns(kind, options, env) {
  const dir = mkdtempSync(join(base, "lg-commit-thread-runs-"));
  const child = spawnSync(
    process.execPath,
    [fixture, storeModule, dir, String(runs), JSON.stringify(options)],
    {
      encoding: "utf8",
      env: { ...process.env, ...env, MANY_RUNS_STORE: kind, MANY_RUNS_TOOL: "0" },
      maxBuffer: 16 * 2 ** 20,
    },
  );
  rmSync(dir, { recursive: true, force: true });
  if (child.status !== 0) throw new Error(`${kind} runs failed: ${child.stderr.slice(0, 400)}`);
  const result = JSON.parse(child.stdout.trim().split("\n").at(-1));
  if ((result.byOutcome.completed ?? 0) !== runs)
    throw new Error(`not every run completed: ${JSON.stringify(result.byOutcome)}`);
  return {
    p99: result.eventLoopDelayMs.p99,
    max: result.eventLoopDelayMs.max,
    rate: runs / (result.durationMs / 1000),
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const cell = (value) => value.toFixed(0).padStart(7);

async function compare(title, measure, withBaseline) {
  console.log(`\n${title}`);
  console.log(
    `${"round".padEnd(6)} ${"variant".padEnd(14)} ${"p99 ms".padStart(7)} ${"max ms".padStart(7)} ${"per s".padStart(7)}`,
  );
  const all = withBaseline ? [{ name: "memory (no disk)", memory: true }, ...variants] : variants;
  const results = new Map(all.map((variant) => [variant.name, []]));
  for (let round = 1; round <= rounds; round += 1) {
    for (const variant of all) {
      const result = await measure(variant);
      results.get(variant.name).push(result);
      console.log(
        `${String(round).padEnd(6)} ${variant.name.padEnd(14)} ${cell(result.p99)} ${cell(result.max)} ${cell(result.rate)}`,
      );
    }
  }
  const medians = new Map(
    [...results].map(([name, list]) => [
      name,
      {
        p99: median(list.map((result) => result.p99)),
        max: median(list.map((result) => result.max)),
        rate: median(list.map((result) => result.rate)),
      },
    ]),
  );
  for (const [name, value] of medians)
    console.log(
      `${"median".padEnd(6)} ${name.padEnd(14)} ${cell(value.p99)} ${cell(value.max)} ${cell(value.rate)}`,
    );
  const main = medians.get("main thread");
  const thread = medians.get("writer thread");
  console.log(
    `writer/main: p99 ${(thread.p99 / main.p99).toFixed(2)}x, max ${(thread.max / main.max).toFixed(2)}x, throughput ${(thread.rate / main.rate).toFixed(2)}x`,
  );
}

if (process.argv[2] === "--store-only") {
  console.log(JSON.stringify(await storeOnly(JSON.parse(process.argv[3]))));
  process.exit(0);
}
const shim = slowFsyncShim();
const disks = [
  { name: "this disk", env: {} },
  ...(shim
    ? [
        {
          name: `fsync +${fsyncMs} ms (emulated)`,
          env: { LD_PRELOAD: shim, SLOW_FSYNC_US: String(fsyncMs * 1000) },
        },
      ]
    : []),
];
console.log(
  `SQLite commits on the main thread vs the writer thread: ${runs.toLocaleString("en")} concurrent runs, ${rounds} rounds, database in ${base}, Node ${process.version}${shim ? "" : " (no C compiler: the slow-fsync rows are skipped)"}`,
);
for (const disk of disks) {
  await compare(
    `${disk.name}, store only: ${appends} appends of one event per run`,
    (variant) => storeOnlyInChild(variant.options, disk.env),
    false,
  );
  await compare(
    `${disk.name}, agent runs: one model call each (core's loop included)`,
    (variant) =>
      variant.memory
        ? agentRuns("memory", {}, disk.env)
        : agentRuns("sqlite", variant.options, disk.env),
    true,
  );
}
