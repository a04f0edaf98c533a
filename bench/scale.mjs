// Scale in one process: `node --expose-gc scale.mjs [runs]`. Starts that many scripted runs at
// once, each waiting on a slow tool; prints memory per run and steps per second.
import { performance } from "node:perf_hooks";
import { createAgent, tool } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";

const runs = Number(process.argv[2] ?? 10_000);
const steps = 3;
const slow = tool({
  name: "slow_lookup",
  description: "A lookup that takes 200 ms.",
  input: v.object({ id: v.number() }),
  run: () => new Promise((resolve) => setTimeout(() => resolve(`record ${"y".repeat(200)}`), 200)),
});
const store = memoryEventStore();
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
const agent = createAgent({ model, tools: [slow], store });
globalThis.gc?.();
const before = process.memoryUsage().heapUsed;
let peakHeap = before;
const sampler = setInterval(() => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
}, 20);
const started = performance.now();
const results = await Promise.all(
  Array.from({ length: runs }, (_, index) => agent.run(`task ${index}`)),
);
const elapsed = (performance.now() - started) / 1000;
clearInterval(sampler);
const completed = results.filter((result) => result.status === "completed").length;
const totalSteps = results.reduce((sum, result) => sum + result.steps, 0);
console.log(
  JSON.stringify({
    runs,
    completed,
    stepsPerSecond: Math.round(totalSteps / elapsed),
    seconds: +elapsed.toFixed(2),
    kbPerRunPeak: +((peakHeap - before) / 1024 / runs).toFixed(1),
    maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
  }),
);
