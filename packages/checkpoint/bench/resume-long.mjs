// Resuming a long log: a run of BENCH_EVENTS events (default 250 000; a tool call per step:
// request, response, intent, result; the last event its run-end) written to each store, then
// `agent.resume` in the same process, twice: through the store's `readBatches` (core folds batch
// by batch) and through a wrapper that hides it (core reads the whole log first, as before).
// Prints wall time, the event loop's longest stall (perf_hooks.monitorEventLoopDelay) and the
// RSS growth during the resume. Asserts nothing about time.
//
//   pnpm --filter @loopguard/core build && pnpm --filter @loopguard/checkpoint build
//   node --expose-gc bench/resume-long.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createAgent } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { jsonlEventStore, sqliteEventStore } from "../dist/index.js";
import { take, toolRunLog } from "./bench-events.mjs";

const count = Number(process.env.BENCH_EVENTS ?? 250_000);
const base = process.env.BENCH_DIR ?? tmpdir();
const runId = "run_long";

/** Whole steps (4 events each) after the start, until at least count - 1 events. */
function runLog() {
  const steps = Math.max(0, Math.ceil((count - 2) / 4));
  return take(
    toolRunLog(runId, {
      resultContent: `{"order_id":"A1001","status":"delivered","note":"${"x".repeat(200)}"}`,
    }),
    1 + 4 * steps,
  );
}

async function write(store) {
  let batch = [];
  let seq = 0;
  for (const event of runLog()) {
    batch.push(event);
    if (batch.length === 5_000) {
      await store.append(runId, batch, { expectedSeq: seq });
      seq += batch.length;
      batch = [];
    }
  }
  batch.push({ type: "run-end", status: "completed", answer: "done", why: "end_turn", at: 1 });
  await store.append(runId, batch, { expectedSeq: seq });
  return seq + batch.length;
}

async function resume(store) {
  globalThis.gc?.();
  const agent = createAgent({ store, tools: [], model: scriptedModel([]) });
  const delay = monitorEventLoopDelay({ resolution: 5 });
  let peakRss = process.memoryUsage.rss();
  const rssBefore = peakRss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 10);
  delay.enable();
  const started = performance.now();
  const result = await agent.resume(runId);
  const ms = performance.now() - started;
  delay.disable();
  clearInterval(sampler);
  if (result.status !== "completed") throw new Error(`resume gave ${result.status}`);
  return { ms, stallMs: delay.max / 1e6, rssMb: (peakRss - rssBefore) / 2 ** 20 };
}

/** The store without readBatches: core reads the whole log, then folds it. */
const withoutBatches = (store) => ({
  name: store.name,
  append: (...args) => store.append(...args),
  read: (...args) => store.read(...args),
  list: (...args) => store.list(...args),
});

console.log(
  `resume of a ${count.toLocaleString("en")}-event log (logs in ${base}, Node ${process.version})`,
);
console.log(
  `${"store / path".padEnd(28)} ${"ms".padStart(8)} ${"stall max".padStart(10)} ${"RSS +MB".padStart(8)}`,
);
for (const [name, make] of [
  ["jsonl", (dir) => jsonlEventStore({ dir })],
  ["sqlite", (dir) => sqliteEventStore({ path: join(dir, "runs.db") })],
]) {
  const dir = mkdtempSync(join(base, `lg-resume-long-${name}-`));
  const writer = make(dir);
  const events = await write(writer);
  await writer.close();
  for (const [path, wrap] of [
    ["readBatches", (store) => store],
    ["read, then fold", withoutBatches],
  ]) {
    const store = make(dir);
    const { ms, stallMs, rssMb } = await resume(wrap(store));
    await store.close();
    console.log(
      `${`${name} (${events.toLocaleString("en")}) ${path}`.padEnd(28)} ${ms.toFixed(0).padStart(8)} ${stallMs.toFixed(0).padStart(10)} ${rssMb.toFixed(0).padStart(8)}`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
}
