// Many concurrent runs on one JSONL store in one process (the child of the descriptor test and
// of bench/many-runs.mjs, started under `ulimit -n`). Each run: a model call that asks for a
// tool, the tool, a model call that answers. Prints one JSON line: outcomes by status, the
// peak of open descriptors (sampled from /proc/self/fd), RSS, event-loop delay, latency.
//
//   node many-runs.mjs <store module URL> <dir> <runs> [store option JSON]
//
// The module's jsonlEventStore({ dir }) is used, or with MANY_RUNS_STORE=sqlite its
// sqliteEventStore({ path: <dir>/runs.db }); MANY_RUNS_STORE=memory uses core's memory store.
//
// MANY_RUNS_TOOL=0: each run is one model call that answers (four events, three appends).
import { readdirSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";

const [storeModule, dir, runsText, storeOptions = "{}"] = process.argv.slice(2);
const storeKind = process.env.MANY_RUNS_STORE ?? "jsonl";
const module = await import(storeModule);
const { memoryEventStore } = await import("@loopguard/core/testing");
// One memory store for the run and the check after it (MANY_RUNS_STORE=memory: the baseline).
const memory = storeKind === "memory" ? memoryEventStore() : undefined;
const makeStore = () =>
  memory ??
  (storeKind === "sqlite"
    ? module.sqliteEventStore({ path: `${dir}/runs.db`, ...JSON.parse(storeOptions) })
    : module.jsonlEventStore({ dir, ...JSON.parse(storeOptions) }));
const runs = Number(runsText);
const store = makeStore();

const lookup = tool({
  name: "lookup_order",
  description: "Looks an order up.",
  input: v.object({ order: v.string() }),
  run: async ({ order }) => `order ${order} shipped`,
});
const withTool = process.env.MANY_RUNS_TOOL !== "0";
const model = scriptedModel(
  (request) => {
    if (!withTool) return { content: "It shipped.", delayMs: 5 };
    const answered = request.messages.some(
      (message) =>
        message.role === "user" &&
        Array.isArray(message.content) &&
        message.content.some((block) => block.type === "tool_result"),
    );
    return answered
      ? { content: "It shipped.", delayMs: 5 }
      : {
          content: [{ type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order: "A1" } }],
          delayMs: 5,
        };
  },
  { copyRequests: false },
);
const agent = createAgent({ model, tools: [lookup], store });

const openNow = () => {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return -1;
  }
};
const baseline = openNow();
let peak = baseline;
let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => {
  peak = Math.max(peak, openNow());
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 20);
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const started = performance.now();
const latencies = [];
// Runs arrive 100 per turn of the event loop, all within the first few ms, so the delay measured
// is the stores' and the loop's, not that of one loop starting ten thousand runs in one stretch.
const arrive = async (index) => {
  if (index % 100 === 0 && index > 0) await new Promise((resolve) => setImmediate(resolve));
};
let arrived = Promise.resolve();
const outcomes = await Promise.all(
  Array.from({ length: runs }, async (_, index) => {
    arrived = arrived.then(() => arrive(index));
    await arrived;
    const runStarted = performance.now();
    try {
      const result = await agent.run(`where is order A${index}?`, { runId: `run_${index}` });
      latencies.push(performance.now() - runStarted);
      return result.status === "failed" ? `failed: ${result.error ?? ""}` : result.status;
    } catch (error) {
      return `threw ${error?.code ?? ""}: ${error?.message ?? error}`;
    }
  }),
);
const durationMs = performance.now() - started;
delay.disable();
clearInterval(sampler);
if (!memory) await store.close();
const byOutcome = {};
for (const outcome of outcomes) {
  const key = outcome.length > 160 ? `${outcome.slice(0, 160)}...` : outcome;
  byOutcome[key] = (byOutcome[key] ?? 0) + 1;
}
const reader = makeStore();
const running = (await reader.list({ status: "running" })).length;
if (!memory) await reader.close();
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
process.stdout.write(
  `${JSON.stringify({
    runs,
    byOutcome,
    running,
    store: storeKind,
    descriptors: {
      baseline,
      peak,
      ...(store.descriptors ? { cap: store.descriptors().cap, peakHeld: store.descriptors().peakHeld } : {}),
    },
    rssMb: Math.round(peakRss / 2 ** 20),
    eventLoopDelayMs: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
    durationMs: Math.round(durationMs),
    latencyMs: { p50: Math.round(at(0.5)), p99: Math.round(at(0.99)) },
  })}\n`,
);
