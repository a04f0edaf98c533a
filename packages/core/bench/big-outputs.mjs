#!/usr/bin/env node
// Big tool outputs with every gate on, while 20 small runs go on beside them.
// Build core, policy, injection and redact first, then:
//   node --expose-gc packages/core/bench/big-outputs.mjs [--quick]
//
// Each case: one run whose tool returns a 10 MB or 50 MB page (prose with an email address
// every few kilobytes), with policy + runGuard + taintGate, heuristicScanner, the quarantine
// envelope, createRedactor and a vault; at the same time 20 small runs (5 steps of 2 KB each)
// on the same agent. Cases: the default cap (100,000 characters, the log keeps the digest),
// outputLog "full" (the log also keeps the whole output, tokenised in slices that yield), and
// for 10 MB "uncapped" (maxOutputChars above the output: what every run did before the cap).
// "alone" rows run the big output with no small runs beside it (its own stall); "floor" runs only
// the 20 small runs (the stall of 20 runs stepping at once, with nothing big).
// Figures: the event loop's longest stall (perf_hooks.monitorEventLoopDelay, 10 ms resolution),
// its p99, peak RSS, the big run's latency and the small runs' p50 / max. Nothing is asserted.
import * as v from "valibot";
import { messageOf, stallMeter } from "./stall-meter.mjs";

const dist = (pkg, path = "index.js") =>
  import(new URL(`../../${pkg}/dist/${path}`, import.meta.url).href);
const { createAgent, tool } = await dist("core");
const { memoryEventStore } = await dist("core", "testing/index.js");
const { heuristicScanner, quarantine, taintGate } = await dist("injection");
const { allow, policy, runGuard } = await dist("policy");
const { createRedactor, createVault } = await dist("redact");

const quick = process.argv.includes("--quick");
const paragraph =
  "Section 4.2 of the handbook explains how returns are processed for orders shipped within the European Union. " +
  "Customers may return any item within thirty days of delivery, provided the packaging is intact. " +
  "Questions go to returns-desk@acme-shop.example or to the store that sold the item.\n";
const pageOf = (bytes) => paragraph.repeat(Math.ceil(bytes / paragraph.length)).slice(0, bytes);
const small = pageOf(2048);
const usage = { input_tokens: 10, output_tokens: 10 };

/** A model that calls `tool` `steps` times, then answers, 5 ms after each request; no network. */
function modelFor(toolName, steps) {
  return {
    name: "bench",
    model: "claude-sonnet-5-5",
    async create(request) {
      // A model answers over the network: 5 ms here, so runs interleave as they would live.
      await new Promise((resolve) => setTimeout(resolve, 5));
      const calls = request.messages.filter((message) => message.role === "assistant").length;
      const content =
        calls < steps
          ? [{ type: "tool_use", id: `toolu_${calls + 1}`, name: toolName, input: { page: calls } }]
          : [{ type: "text", text: "done" }];
      return messageOf(calls, content, calls < steps, usage);
    },
  };
}

// One scanner, envelope and redactor for every agent (they hold no run state); a vault per agent.
const scanner = heuristicScanner();
const envelope = quarantine();
const redact = createRedactor();

function agentFor(toolName, output, steps, options) {
  const fetch = tool({
    name: toolName,
    description: "Fetch a page.",
    input: v.object({ page: v.number() }),
    run: async () => output,
  });
  return createAgent({
    model: modelFor(toolName, steps),
    tools: [fetch],
    gates: [policy([allow("fetch_*")]), runGuard(), taintGate()],
    scanner,
    envelope,
    redact,
    vault: createVault(),
    store: memoryEventStore(),
    ...options,
  });
}

async function measure(label, bytes, options, smallCount = 20) {
  globalThis.gc?.();
  const output = pageOf(bytes);
  const big = bytes > 0 ? agentFor("fetch_big", output, 1, options) : undefined;
  const smalls = Array.from({ length: smallCount }, () => agentFor("fetch_small", small, 5, {}));
  const meter = stallMeter();
  const started = performance.now();
  const bigRun = big
    ? big
        .run("Read the whole page.")
        .then((result) => ({ result, ms: performance.now() - started }))
    : Promise.resolve({ result: undefined, ms: 0 });
  const smallRuns = smalls.map(async (agent) => {
    const begun = performance.now();
    const result = await agent.run("Read five pages.");
    if (result.status !== "completed")
      throw new Error(`small run: ${result.status} ${result.error}`);
    return performance.now() - begun;
  });
  const [{ result, ms }, ...latencies] = await Promise.all([bigRun, ...smallRuns]);
  const stalls = meter.stop();
  if (result && result.status !== "completed")
    throw new Error(`${label}: ${result.status} ${result.error}`);
  const events = result ? await big.store.read(result.runId) : [];
  const logged = events.find((event) => event.type === "tool-call-result") ?? { content: "" };
  latencies.sort((a, b) => a - b);
  if (latencies.length === 0) latencies.push(Number.NaN);
  return {
    label,
    ...stalls,
    bigRunMs: ms,
    smallP50Ms: latencies[Math.floor(latencies.length / 2)],
    smallMaxMs: latencies.at(-1),
    modelSawChars: logged.content.length,
    loggedChars: logged.content.length + (logged.fullOutput?.length ?? 0),
  };
}

const mb = 2 ** 20;
const cases = [
  ["no big output (floor)", 0, {}],
  ["10 MB alone, cap 100k", 10 * mb, {}, 0],
  ["10 MB, cap 100k (digest)", 10 * mb, {}],
  ["10 MB, cap 100k (full log)", 10 * mb, { outputLog: "full" }],
  ["10 MB, uncapped (before)", 10 * mb, { maxOutputChars: 11 * mb }],
  ["10 MB alone, uncapped", 10 * mb, { maxOutputChars: 11 * mb }, 0],
  ...(quick
    ? []
    : [
        ["50 MB, cap 100k (digest)", 50 * mb, {}],
        ["50 MB, cap 100k (full log)", 50 * mb, { outputLog: "full" }],
      ]),
];
await measure("warm-up", mb, {});
const rows = [];
for (const [label, bytes, options, smallCount] of cases)
  rows.push(await measure(label, bytes, options, smallCount));
const base = rows.find((row) => row.label.startsWith("10 MB, cap 100k (digest)"));
const fixed = (value, digits = 1) => value.toFixed(digits).padStart(8);
console.log(
  `node ${process.version}, load average ${(await import("node:os")).loadavg()[0].toFixed(1)}, ${new Date().toISOString().slice(0, 10)}; 1 big run + 20 small runs (5 x 2 KB steps) at once, every gate on`,
);
console.log(
  "case                          | max stall ms | max CPU between ticks ms | p99 stall ms | peak RSS MB | big run ms | small p50 ms | small max ms | model saw chars | logged chars",
);
for (const row of rows)
  console.log(
    `${row.label.padEnd(29)} | ${fixed(row.maxStallMs)}     | ${fixed(row.maxCpuMs)}                 | ${fixed(row.p99StallMs)}     | ${fixed(row.peakRssMb, 0)}    | ${fixed(row.bigRunMs, 0)}   | ${fixed(row.smallP50Ms)}     | ${fixed(row.smallMaxMs)}     | ${String(row.modelSawChars).padStart(15)} | ${String(row.loggedChars).padStart(12)}`,
  );
const uncapped = rows.find((row) => row.label.startsWith("10 MB, uncapped"));
if (uncapped)
  console.log(
    `10 MB: the cap cuts the longest stall ${(uncapped.maxStallMs / base.maxStallMs).toFixed(1)}x and the big run's latency ${(uncapped.bigRunMs / base.bigRunMs).toFixed(1)}x`,
  );
