#!/usr/bin/env node
// Resuming a 1,000,000-event log. Build core and checkpoint first, then:
//   node packages/core/bench/resume-long-log.mjs [events]      (default 1,000,000)
//
// The log: the events of a real 250,000-step run (model-request, model-response with a tool
// call, tool-call-intent, tool-call-result per step; then the answer and run-end), made from a
// recorded 2-step run with steps, ids and seqs renumbered, written by jsonlEventStore (its own
// lines and hash chain) in batches of 20,000. Each case runs in a fresh child process:
//   - "readBatches": agent.resume(runId) on a jsonlEventStore that reads in batches (when the
//     store has readBatches) and folds in slices that yield;
//   - "read + sliced fold": the same store with readBatches hidden (the whole log read at once,
//     then folded in slices that yield);
//   - "read + one fold (before)": store.read then foldRun in one go, what resume did before.
// Figures: wall time, the event loop's longest stall (monitorEventLoopDelay and the gap between
// 5 ms ticks), peak RSS, and the log's size. Nothing is asserted.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as v from "valibot";
import { messageOf, stallMeter } from "./stall-meter.mjs";

const dist = (pkg, path = "index.js") =>
  import(new URL(`../../${pkg}/dist/${path}`, import.meta.url).href);
const { createAgent, tool } = await dist("core");
const { foldRun } = await dist("core", "plugin/index.js");
const { memoryEventStore } = await dist("core", "testing/index.js");
const { jsonlEventStore } = await dist("checkpoint");

const runId = "run_long_log";
const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: ({ order_id }) => `Order ${order_id}: delivered on 2026-11-20, signed for at the door.`,
});

function scripted(steps) {
  return {
    name: "bench",
    model: "claude-sonnet-5-5",
    async create(request) {
      const calls = request.messages.filter((message) => message.role === "assistant").length;
      const content =
        calls < steps
          ? [
              {
                type: "tool_use",
                id: `toolu_${calls}`,
                name: "lookup_order",
                input: { order_id: `A${calls}` },
              },
            ]
          : [{ type: "text", text: "All delivered." }];
      return messageOf(calls, content, calls < steps, { input_tokens: 100, output_tokens: 20 });
    },
  };
}

/** The events of a `steps`-step run, from a recorded 2-step run, renumbered. */
async function* longRun(total) {
  const template = memoryEventStore();
  await createAgent({ model: scripted(2), tools: [lookup], store: template }).run(
    "Check every order of the account.",
    { runId },
  );
  const recorded = await template.read(runId);
  const [start, ...rest] = recorded;
  // run-start; 4 events a step; then the final request, response and run-end.
  const stepEvents = rest.slice(0, 4);
  const tail = rest.slice(8);
  const steps = Math.floor((total - 1 - tail.length) / 4);
  const strip = ({ seq: _seq, ...event }) => event;
  yield [strip(start)];
  let batch = [];
  for (let step = 1; step <= steps; step += 1) {
    for (const event of stepEvents) {
      const text = JSON.stringify(strip(event))
        .replaceAll('"toolu_0"', `"toolu_${step - 1}"`)
        .replaceAll("runId:toolu_0", `runId:toolu_${step - 1}`)
        .replaceAll('"A0"', `"A${step - 1}"`)
        .replaceAll("Order A0:", `Order A${step - 1}:`)
        .replaceAll('"msg_0"', `"msg_${step - 1}"`)
        .replace(/"step":1\b/g, `"step":${step}`);
      batch.push(JSON.parse(text));
    }
    if (batch.length >= 20_000) {
      yield batch;
      batch = [];
    }
  }
  for (const event of tail) {
    const text = JSON.stringify(strip(event)).replace(/"step":3\b/g, `"step":${steps + 1}`);
    batch.push(JSON.parse(text));
  }
  yield batch;
}

async function writeLog(dir, total) {
  const store = jsonlEventStore({ dir });
  let seq = 0;
  for await (const batch of longRun(total)) {
    await store.append(runId, batch, { expectedSeq: seq });
    seq += batch.length;
  }
  await store.close();
  return { events: seq, bytes: statSync(store.fileOf(runId)).size };
}

async function measure(dir, mode) {
  const store = jsonlEventStore({ dir });
  const meter = stallMeter();
  const started = performance.now();
  let outcome;
  if (mode === "before") {
    const events = await store.read(runId);
    const fold = foldRun(events, "the log");
    outcome = `${fold.status}, ${events.length} events`;
  } else {
    const used =
      mode === "read"
        ? Object.assign(Object.create(null), store, { readBatches: undefined, name: store.name })
        : store;
    if (mode === "read")
      for (const key of ["append", "read", "list", "acquireRun"])
        used[key] = store[key]?.bind(store);
    const agent = createAgent({ model: scripted(0), tools: [lookup], store: used });
    const result = await agent.resume(runId);
    outcome = `${result.status}, ${result.steps} steps`;
  }
  const ms = performance.now() - started;
  const { maxCpuMs, maxStallMs, peakRssMb } = meter.stop();
  await store.close();
  return {
    ms,
    maxCpuMs,
    maxStallMs,
    peakRssMb,
    outcome,
    streamed: mode === "batches" && typeof store.readBatches === "function",
  };
}

const [, , first, second, third] = process.argv;
if (first === "--child") {
  console.log(JSON.stringify(await measure(second, third)));
} else {
  const total = Number(first ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), "loopguard-resume-bench-"));
  try {
    const writeStarted = performance.now();
    const { events, bytes } = await writeLog(dir, total);
    console.log(
      `node ${process.version}, load average ${(await import("node:os")).loadavg()[0].toFixed(1)}; a log of ${events.toLocaleString("en-US")} events, ${(bytes / 2 ** 20).toFixed(0)} MB, written in ${((performance.now() - writeStarted) / 1000).toFixed(1)} s`,
    );
    console.log(
      "case                      | time s | max stall ms | max CPU between ticks ms | peak RSS MB | outcome",
    );
    const rows = {};
    for (const [label, mode] of [
      ["readBatches", "batches"],
      ["read + sliced fold", "read"],
      ["read + one fold (before)", "before"],
    ]) {
      const output = execFileSync(
        process.execPath,
        ["--max-old-space-size=8192", fileURLToPath(import.meta.url), "--child", dir, mode],
        { encoding: "utf8", maxBuffer: 1 << 20 },
      );
      const row = JSON.parse(output.trim().split("\n").at(-1));
      rows[mode] = row;
      console.log(
        `${label.padEnd(25)} | ${(row.ms / 1000).toFixed(2).padStart(6)} | ${row.maxStallMs.toFixed(1).padStart(12)} | ${row.maxCpuMs.toFixed(1).padStart(24)} | ${row.peakRssMb.toFixed(0).padStart(11)} | ${row.outcome}${mode === "batches" && !row.streamed ? " (this checkpoint build has no readBatches: read was used)" : ""}`,
      );
    }
    console.log(
      `longest stall: ${(rows.before.maxStallMs / rows.batches.maxStallMs).toFixed(0)}x shorter with readBatches; peak RSS ${(rows.batches.peakRssMb / rows.before.peakRssMb).toFixed(2)}x of before`,
    );
  } finally {
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
    else console.log(dir);
  }
}
