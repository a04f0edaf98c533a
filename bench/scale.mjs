// Scale in one process: `node --expose-gc scale.mjs [runs] [concurrency]`.
// (`node scale.mjs admission [runs]`: admission control, see scale-admission.mjs.)
//
// Two rows, each in its own child process so one cannot hold the other's heap:
// - `default`: an agent given no store (the bounded `memoryEventStore()`: logs of unfinished
//   runs and of the last 100 finished ones);
// - `unbounded`: `memoryEventStore({ maxFinishedRuns: Number.MAX_SAFE_INTEGER })`, which keeps
//   every log as the in-memory store did before it was bounded.
// Each runs `runs` scripted runs (three steps, each waiting on a 200 ms tool), `concurrency` at a
// time, then collects garbage with the agent still alive and prints the heap it holds. The
// ratio `heapAfterGcMb` default/unbounded is the figure that names the fix; the goal is ≤ 100 MB
// for the default after 10,000 runs. It fails (exit 1) when the default is over the goal.
import { spawnSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createAgent, memoryEventStore, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";

if (process.argv[2] === "admission") {
  await import("./scale-admission.mjs");
  process.exit(0);
}
const runs = Number(process.argv[2] ?? 10_000);
// A tool output of about 4 KB, like a real record lookup (the log keeps what the model saw).
const recordChars = 4_000;
const concurrency = Number(process.argv[3] ?? 1_000);
const child = process.argv[4];
const goalMb = 100;

if (child === undefined) {
  const rows = {};
  for (const kind of ["default", "unbounded"]) {
    const out = spawnSync(
      process.execPath,
      [
        "--expose-gc",
        "--max-old-space-size=4096",
        fileURLToPath(import.meta.url),
        String(runs),
        String(concurrency),
        kind,
      ],
      { encoding: "utf8" },
    );
    if (out.status !== 0) {
      console.error(out.stderr);
      process.exit(1);
    }
    rows[kind] = JSON.parse(out.stdout.trim().split("\n").at(-1));
    console.log(JSON.stringify(rows[kind]));
  }
  const ratio = rows.default.heapAfterGcMb / rows.unbounded.heapAfterGcMb;
  console.log(
    JSON.stringify({
      heapAfterGcDefaultOverUnbounded: +ratio.toFixed(3),
      goalMb,
      met: rows.default.heapAfterGcMb <= goalMb,
    }),
  );
  process.exit(rows.default.heapAfterGcMb <= goalMb ? 0 : 1);
}

const steps = 3;
const slow = tool({
  name: "slow_lookup",
  description: "A lookup that takes 200 ms and returns about 4 KB.",
  input: v.object({ id: v.number() }),
  run: () =>
    new Promise((resolve) => setTimeout(() => resolve(`record ${"y".repeat(recordChars)}`), 200)),
});
const model = scriptedModel(
  (request) => {
    const turns = request.messages.length;
    return turns < steps * 2
      ? {
          content: [
            { type: "tool_use", id: `toolu_${turns}`, name: "slow_lookup", input: { id: turns } },
          ],
          usage: { input_tokens: 50, output_tokens: 20 },
        }
      : { content: "done", usage: { input_tokens: 50, output_tokens: 5 } };
  },
  { copyRequests: false },
);
const store =
  child === "unbounded"
    ? memoryEventStore({ maxFinishedRuns: Number.MAX_SAFE_INTEGER })
    : undefined;
const agent = createAgent({
  model,
  tools: [slow],
  ...(store ? { store } : {}),
  onError: () => undefined,
});
globalThis.gc();
const before = process.memoryUsage().heapUsed;
let peakHeap = before;
const sampler = setInterval(() => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
}, 20);
const started = performance.now();
let completed = 0;
let totalSteps = 0;
for (let first = 0; first < runs; first += concurrency) {
  const wave = await Promise.all(
    Array.from({ length: Math.min(concurrency, runs - first) }, (_, index) =>
      agent.run(`task ${first + index}`),
    ),
  );
  for (const result of wave) {
    if (result.status === "completed") completed += 1;
    totalSteps += result.steps;
  }
}
const elapsed = (performance.now() - started) / 1000;
clearInterval(sampler);
globalThis.gc();
globalThis.gc();
const after = process.memoryUsage().heapUsed;
const listed = (await agent.store.list()).length;
console.log(
  JSON.stringify({
    store: child,
    runs,
    concurrency,
    completed,
    logsKept: agent.store.size,
    summariesListed: listed,
    heapAfterGcMb: +((after - before) / 1024 / 1024).toFixed(1),
    peakHeapMb: +((peakHeap - before) / 1024 / 1024).toFixed(1),
    stepsPerSecond: Math.round(totalSteps / elapsed),
    seconds: +elapsed.toFixed(2),
  }),
);
