// Admission control under a burst: `node scale.mjs admission [runs]` (default 1,000). Starts
// that many streaming runs at once (each: one tool call, then a streamed answer of about 2 KB in
// 16-character deltas, the model waiting 50 ms before each step) on one agent, twice, each in
// its own child process: with the default maxConcurrentRuns, and with no limit
// (maxConcurrentRuns 1e9, as before admission control). Prints the event loop's delay (p99 and
// max, perf_hooks.monitorEventLoopDelay) and when the median run finished as a share of the
// batch's wall time. Goals: p99 delay ≤ 100 ms, median run done before half the batch.
import { spawnSync } from "node:child_process";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createAgent, memoryEventStore, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";

const runs = Number(process.argv[3] ?? 1_000);
const mode = process.argv[4];

if (mode === undefined) {
  const rows = {};
  for (const kind of ["default", "32", "unlimited"]) {
    const out = spawnSync(
      process.execPath,
      [fileURLToPath(new URL("./scale.mjs", import.meta.url)), "admission", String(runs), kind],
      { encoding: "utf8", maxBuffer: 1 << 24 },
    );
    if (out.status !== 0) {
      console.error(out.stderr);
      process.exit(1);
    }
    rows[kind] = JSON.parse(out.stdout.trim().split("\n").at(-1));
    console.log(JSON.stringify(rows[kind]));
  }
  const met = rows.default.loopDelayP99Ms <= 100 && rows.default.medianDoneShare <= 0.5;
  console.log(JSON.stringify({ goals: "p99 <= 100 ms, median done <= 0.5 of batch", met }));
  process.exit(0);
}

const lookup = tool({
  name: "lookup",
  description: "Looks up a record.",
  input: v.object({ id: v.number() }),
  run: ({ id }) => `record ${id}: ${"x".repeat(200)}`,
});
const answer = "The order was delivered on Tuesday. ".repeat(56);
const model = scriptedModel(
  (request) =>
    request.messages.length < 2
      ? {
          content: [{ type: "tool_use", id: "tu_1", name: "lookup", input: { id: 1 } }],
          delayMs: 50,
        }
      : { content: answer, delayMs: 50 },
  { copyRequests: false, chunkChars: 16 },
);
const agent = createAgent({
  model,
  tools: [lookup],
  store: memoryEventStore(),
  ...(mode === "unlimited"
    ? { maxConcurrentRuns: 1e9 }
    : /^\d+$/.test(mode)
      ? { maxConcurrentRuns: Number(mode) }
      : {}),
});
const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
// CPU this process used between two 5 ms ticks: on a loaded machine a wall-clock delay is
// mostly waiting for a core, so this is the closer measure of one synchronous stretch.
const cpuStretches = [];
let lastCpu = process.cpuUsage();
const ticker = setInterval(() => {
  const cpu = process.cpuUsage();
  cpuStretches.push((cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
  lastCpu = cpu;
}, 5);
const started = performance.now();
const done = [];
await Promise.all(
  Array.from({ length: runs }, async (_, index) => {
    const stream = agent.stream(`task ${index}`);
    for await (const _event of stream);
    const result = await stream.result;
    if (result.status !== "completed") throw new Error(`run ${index}: ${result.status}`);
    done.push(performance.now() - started);
  }),
);
const wall = performance.now() - started;
histogram.disable();
clearInterval(ticker);
cpuStretches.sort((a, b) => a - b);
done.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    maxConcurrentRuns: mode === "unlimited" ? "none" : mode,
    runs,
    wallMs: Math.round(wall),
    medianDoneMs: Math.round(done[Math.floor(done.length / 2)]),
    medianDoneShare: +(done[Math.floor(done.length / 2)] / wall).toFixed(2),
    loopDelayP99Ms: +(histogram.percentile(99) / 1e6).toFixed(1),
    loopDelayMaxMs: +(histogram.max / 1e6).toFixed(1),
    cpuStretchP99Ms: +cpuStretches[Math.floor(cpuStretches.length * 0.99)].toFixed(1),
    cpuStretchMaxMs: +cpuStretches.at(-1).toFixed(1),
    loadAverage: +(globalThis.process.getBuiltinModule?.("node:os")?.loadavg()[0] ?? 0).toFixed(1),
  }),
);
