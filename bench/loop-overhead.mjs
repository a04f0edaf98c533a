// One measurement in a fresh process: `node --expose-gc loop-overhead.mjs <system> <N> <repeats> [no-memory]`.
// The workload (systems.mjs): a model that calls a tool returning a 2 KB page N times, then answers.
// Prints one JSON line: { system, n, usPerStep, cpuUsPerStep and gcUsPerStep (one per repeat),
// retainedKbPerStep, maxRssMb }.
import { constants, PerformanceObserver, performance } from "node:perf_hooks";
import { systems } from "./systems.mjs";

const [system, nText, repeatsText, memoryText] = process.argv.slice(2);
const n = Number(nText);
const repeats = Number(repeatsText ?? 3);
// "no-memory" skips the retained-memory figure (one more run: 75 s for the Agents SDK at N=1,000).
const measureMemory = memoryText !== "no-memory";

const make = systems[system];
if (!make) {
  console.error(`unknown system ${system}; one of ${Object.keys(systems).join(", ")}`);
  process.exit(2);
}
const runOnce = await make();
await runOnce(Math.min(20, n)); // warm-up
const usPerStep = [];
const cpuUsPerStep = [];
const gcUsPerStep = [];
let last;
// Garbage collection pauses of the main thread, summed per repeat (forced collections excluded).
let gcMs = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (((entry.detail?.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) === 0)
      gcMs += entry.duration;
  }
});
observer.observe({ entryTypes: ["gc"] });
for (let index = 0; index < repeats; index += 1) {
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 20));
  gcMs = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  last = undefined;
  last = await runOnce(n);
  usPerStep.push(((performance.now() - started) * 1000) / n);
  const used = process.cpuUsage(cpu);
  cpuUsPerStep.push((used.user + used.system) / n);
  await new Promise((resolve) => setTimeout(resolve, 20)); // GC entries arrive on a later tick
  gcUsPerStep.push((gcMs * 1000) / n);
}
observer.disconnect();
// Peak RSS of the timed runs, before the memory figure keeps two runs alive at once.
const maxRssMb = process.resourceUsage().maxRSS / 1024;
// Memory a finished run still holds (its history), per step: the heap grown by keeping the
// result of one more run alongside the last timed one.
const collect = () => {
  for (let round = 0; round < 3; round += 1) globalThis.gc?.();
};
let retainedKbPerStep;
if (measureMemory) {
  const kept = [last];
  collect();
  const withOne = process.memoryUsage().heapUsed;
  kept.push(await runOnce(n));
  collect();
  retainedKbPerStep = (process.memoryUsage().heapUsed - withOne) / 1024 / n;
}
console.log(
  JSON.stringify({
    system,
    n,
    usPerStep,
    cpuUsPerStep,
    gcUsPerStep,
    retainedKbPerStep,
    maxRssMb,
    ...(runOnce.info ?? {}),
  }),
);
