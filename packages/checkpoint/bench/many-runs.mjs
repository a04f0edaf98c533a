// Thousands of concurrent runs in one process under a descriptor limit: for each store, a
// child process started with `ulimit -n` (default 1024) runs N agent runs at once (arriving
// 100 per turn of the event loop, each a model call that answers; BENCH_TOOL=1 adds a tool
// call) and reports outcomes, runs left `running`, the peak of open descriptors, peak RSS,
// event-loop delay (perf_hooks.monitorEventLoopDelay) and run latency. Core's memory store is
// the baseline: what the loop costs with no disk at all. Asserts nothing about time.
//
//   pnpm --filter @loopguard/core build && pnpm --filter @loopguard/checkpoint build
//   node bench/many-runs.mjs            # BENCH_RUNS=10000 BENCH_ULIMIT=1024 BENCH_DIR=/tmp
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const fixture = resolve(here, "../src/__fixtures__/many-runs.mjs");
const storeModule = pathToFileURL(resolve(here, "../dist/index.js")).href;
const runs = Number(process.env.BENCH_RUNS ?? 10_000);
const limit = Number(process.env.BENCH_ULIMIT ?? 1024);
const base = process.env.BENCH_DIR ?? tmpdir();

console.log(
  `${runs.toLocaleString("en")} concurrent runs per store, ulimit -n ${limit}, ${process.env.BENCH_TOOL === "1" ? "one tool call per run" : "one model call per run"}, logs in ${base}, Node ${process.version}`,
);
console.log(
  `${"store".padEnd(8)} ${"completed".padStart(9)} ${"running".padStart(7)} ${"fds peak".padStart(8)} ${"fd cap".padStart(6)} ${"RSS MB".padStart(6)} ${"loop p99".padStart(8)} ${"loop max".padStart(8)} ${"total s".padStart(7)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)}`,
);
for (const kind of ["memory", "jsonl", "sqlite"]) {
  const dir = mkdtempSync(join(base, `lg-many-${kind}-`));
  const child = spawnSync(
    "/bin/sh",
    [
      "-c",
      `ulimit -n ${limit} && exec "$0" "$@"`,
      process.execPath,
      fixture,
      storeModule,
      dir,
      String(runs),
    ],
    {
      encoding: "utf8",
      env: {
        ...process.env,
        MANY_RUNS_STORE: kind,
        MANY_RUNS_TOOL: process.env.BENCH_TOOL === "1" ? "1" : "0",
      },
      maxBuffer: 16 * 2 ** 20,
    },
  );
  rmSync(dir, { recursive: true, force: true });
  if (child.status !== 0) {
    console.log(`${kind.padEnd(8)} failed: ${child.stderr.slice(0, 400)}`);
    continue;
  }
  const result = JSON.parse(child.stdout.trim().split("\n").at(-1));
  const completed = result.byOutcome.completed ?? 0;
  console.log(
    `${kind.padEnd(8)} ${String(completed).padStart(9)} ${String(result.running).padStart(7)} ${String(result.descriptors.peak).padStart(8)} ${String(result.descriptors.cap ?? "-").padStart(6)} ${String(result.rssMb).padStart(6)} ${result.eventLoopDelayMs.p99.toFixed(0).padStart(8)} ${result.eventLoopDelayMs.max.toFixed(0).padStart(8)} ${(result.durationMs / 1000).toFixed(1).padStart(7)} ${String(result.latencyMs.p50).padStart(7)} ${String(result.latencyMs.p99).padStart(7)}`,
  );
  if (completed !== runs) console.log(`         outcomes: ${JSON.stringify(result.byOutcome)}`);
}
