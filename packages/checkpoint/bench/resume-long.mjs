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

const count = Number(process.env.BENCH_EVENTS ?? 250_000);
const base = process.env.BENCH_DIR ?? tmpdir();
const runId = "run_long";

function* runLog() {
  yield {
    type: "run-start",
    runId,
    agentId: "bench",
    task: "Order A1001 arrived broken, refund please",
    model: "claude-sonnet-5-5",
    maxTokens: 1024,
    budget: {},
    policyDigest: "p",
    toolDigest: "t",
    at: 1,
  };
  let written = 1;
  for (let step = 1; written < count - 1; step += 1) {
    const id = `toolu_${step}`;
    yield {
      type: "model-request",
      step,
      maxTokens: 1024,
      estimateUsd: 0.01,
      requestDigest: `d${step}`,
      at: step,
    };
    yield {
      type: "model-response",
      step,
      response: {
        id: `msg_${step}`,
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: [{ type: "tool_use", id, name: "lookup_order", input: { order_id: "A1001" } }],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 200, output_tokens: 30 },
      },
      costUsd: 0.0009,
      latencyMs: 700,
      attempts: 1,
      at: step,
    };
    yield {
      type: "tool-call-intent",
      step,
      toolUseId: id,
      tool: "lookup_order",
      args: { order_id: "A1001" },
      argsDigest: "a",
      idempotencyKey: `${runId}:${id}`,
      decision: { outcome: "allow", passed: ["1:validation"] },
      at: step,
    };
    yield {
      type: "tool-call-result",
      step,
      toolUseId: id,
      tool: "lookup_order",
      status: "ok",
      content: `{"order_id":"A1001","status":"delivered","note":"${"x".repeat(200)}"}`,
      isError: false,
      durationMs: 12,
      attempts: 1,
      at: step,
    };
    written += 4;
  }
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
