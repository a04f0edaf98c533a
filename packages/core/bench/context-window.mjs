#!/usr/bin/env node
// Context-window management, measured against the loopback Messages API server with the context
// limit enforced (real @anthropic-ai/sdk via claudeModel, real HTTP, the prompt-cache simulator).
// Build first:
//   pnpm --filter @loopguard/core build && node packages/core/bench/context-window.mjs [--quick]
//
// 1. A 1,000-step run (200 with --quick) with 20 KB tool results under a 200k window: does it
//    complete, and was any request over the limit (the server refuses those with a 400)?
// 2. USD of a 200-step run with 20 KB results (Sonnet 5.5 prices) with clearing + compaction,
//    against (a) the cache-optimal bound for the prompts it actually sent (each request reads
//    the longest prefix it shares with the one before, writes the rest once) and (b) the same
//    run with no management: it is refused at the window, and carrying it on with the history
//    cut to the window (oldest turns dropped, so the prefix moves every step) pays a full
//    window of cache writes per step from there.
// 3. Loop CPU per step, management on vs off, for runs that never reach the threshold
//    (scripted model, no network; interleaved repeats, median ratio).
// Nothing asserts anything about time: figures are printed side by side as ratios. The run
// fails (exit 1) only when a request went over the window or the long run did not complete.
import * as v from "valibot";

const dist = new URL("../dist/", import.meta.url);
const core = await import(new URL("index.js", dist).href);
const testing = await import(new URL("testing/index.js", dist).href);
const anthropic = await import(new URL("anthropic/index.js", dist).href);
const quick = process.argv.includes("--quick");
// --only=long,cost,cpu,server runs some parts.
const only = process.argv
  .find((arg) => arg.startsWith("--only="))
  ?.slice(7)
  .split(",");
const part = (name) => !only || only.includes(name);
const key = "sk-ant-bench-not-a-real-key";
const model = "claude-sonnet-5-5";
const price = core.claudePrices[model];
const window = 200_000;
const system = "You read long reports page by page and keep notes of what matters.";
const page = (n) => `page ${n}: ${"lorem ipsum dolor sit amet ".repeat(760)}`.slice(0, 20_000);
const fetchPage = core.tool({
  name: "fetch_page",
  description: "Fetch a page of the report by its number.",
  input: v.object({ n: v.number() }),
  idempotent: true,
  run: async ({ n }) => page(n),
});
const managed = {
  clearToolResults: { keepLast: 5, atFraction: 0.5 },
  compact: { atFraction: 0.8 },
};

function lastCall(messages) {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const content = messages[index].content;
    if (typeof content === "string") continue;
    for (const block of content)
      if (block.type === "tool_use") return Number(block.id.replace("call_", ""));
  }
  return 0;
}
const pages = (steps) => (received) => {
  const body = received.body;
  if (body.tool_choice?.type === "none")
    return { content: `Read pages 1 to ${lastCall(body.messages)}; no finding yet.` };
  const next = lastCall(body.messages) + 1;
  if (next > steps) return { content: "Done: the report has no finding." };
  return {
    content: [
      { type: "text", text: `Reading page ${next}.` },
      { type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } },
    ],
  };
};

async function managedRun(steps, contextWindow, contextLimit = window) {
  const server = await testing.messagesApiServer({ handler: pages(steps), contextLimit });
  try {
    const agent = core.createAgent({
      model: anthropic.claudeModel({
        model,
        baseURL: server.url,
        apiKey: key,
        contextWindow: window,
        maxTokens: 1024,
      }),
      tools: [fetchPage],
      system,
      store: testing.memoryEventStore(),
      ...(contextWindow ? { contextWindow } : {}),
    });
    const started = performance.now();
    const result = await agent.run("Read the whole report and tell me what it finds.");
    const ms = performance.now() - started;
    const calls = server.requests.filter((request) => request.path === "/v1/messages");
    const answered = calls.filter((request) => request.usage);
    return { result, ms, calls, answered, refused: server.refusedTooLong };
  } finally {
    await server.close();
  }
}

/** Blocks of a request body in the API's prefix order, as the loopback server counts them. */
function blocksOf(body) {
  const blocks = [];
  const add = (block) => {
    const { cache_control, ...plain } = block ?? {};
    const text = JSON.stringify(plain);
    blocks.push({ text, tokens: Math.ceil(Buffer.byteLength(text) / 4) });
  };
  for (const spec of body.tools ?? []) add(spec);
  if (typeof body.system === "string") add({ type: "text", text: body.system });
  else for (const block of body.system ?? []) add(block);
  for (const message of body.messages)
    if (typeof message.content === "string") add({ type: "text", text: message.content });
    else for (const block of message.content) add(block);
  return blocks;
}

/**
 * The cheapest any client could pay for exactly these prompts: each request reads from the
 * cache the longest prefix it shares with the request before it, writes the rest once (5-minute
 * price; plain input for the last request), output as reported.
 */
function cacheOptimal(requests) {
  let previous = [];
  let cost = 0;
  requests.forEach((request, index) => {
    const blocks = blocksOf(request.body);
    let shared = 0;
    let at = 0;
    while (at < blocks.length && at < previous.length && blocks[at].text === previous[at].text) {
      shared += blocks[at].tokens;
      at += 1;
    }
    const total = blocks.reduce((sum, block) => sum + block.tokens, 0);
    const fresh = total - shared;
    const last = index === requests.length - 1;
    cost +=
      (shared * price.cacheReadPerMTok +
        fresh * (last ? price.inputPerMTok : price.cacheWrite5mPerMTok) +
        request.usage.output_tokens * price.outputPerMTok) /
      1_000_000;
    previous = blocks;
  });
  return cost;
}

const fmt = (usd) => `$${usd.toFixed(4)}`;
let failed = false;

// 1. The long run.
if (part("long")) {
  const steps = quick ? 200 : 1000;
  const run = await managedRun(steps, managed);
  const largest = Math.max(...run.calls.map((request) => testing.loopbackTokenCount(request.body)));
  console.log(
    `# ${steps}-step run, 20 KB tool results, ${window}-token window enforced (${model})\n`,
  );
  const compactions = run.answered.filter((request) => request.body.tool_choice?.type === "none");
  console.log(
    `${compactions.length} compactions; status ${run.result.status}, ${run.result.steps} model steps, ${run.calls.length} requests (compactions included), ${run.refused} refused as too long, largest prompt ${largest} tokens, ${(run.ms / 1000).toFixed(1)} s wall, $${run.result.costUsd.toFixed(2)}`,
  );
  if (run.result.status !== "completed" || run.refused > 0 || largest > window) failed = true;
}

// 2. Cost of a 200-step run.
if (part("cost")) {
  const steps = 200;
  console.log(
    `\n# USD of a ${steps}-step run, 20 KB results, ${model} prices (${core.priceTableDate})\n`,
  );
  const run = await managedRun(steps, managed);
  const optimal = cacheOptimal(run.answered);
  const unmanaged = await managedRun(steps, undefined);
  // Carrying the unmanaged run on past the window with its history cut to the window: every
  // later step's prompt is a full window whose prefix moved (the oldest turn dropped), so it is
  // written to the cache afresh; output as in the managed run's steps.
  const spentBefore = unmanaged.result.costUsd;
  const stepsLeft = steps + 1 - unmanaged.result.steps;
  const perStepOutput =
    run.answered.reduce((sum, request) => sum + request.usage.output_tokens, 0) /
    run.answered.length;
  const cutOff =
    spentBefore +
    (stepsLeft * (window * price.cacheWrite5mPerMTok + perStepOutput * price.outputPerMTok)) /
      1_000_000;
  // The unmanaged run with a window large enough for all of it (a 1M-token model): its prompt
  // grows by the same tokens each step; billed at the cache-optimal rate (everything already
  // sent read, the new part written once).
  const grown = unmanaged.answered.map((request) => testing.loopbackTokenCount(request.body));
  const perStep = (grown.at(-1) - grown[0]) / (grown.length - 1);
  let big = 0;
  for (let step = 0; step <= steps; step += 1) {
    const total = grown[0] + perStep * step;
    const previous = step === 0 ? 0 : grown[0] + perStep * (step - 1);
    big +=
      (previous * price.cacheReadPerMTok +
        (total - previous) * price.cacheWrite5mPerMTok +
        perStepOutput * price.outputPerMTok) /
      1_000_000;
  }
  console.log("| run | USD | ratio |\n|---|---|---|");
  console.log(
    `| cache-optimal bound for the prompts the managed run sent | ${fmt(optimal)} | 1.00× |`,
  );
  console.log(
    `| managed (clear at 0.5 keeping 5, compact at 0.8) | ${fmt(run.result.costUsd)} | ${(run.result.costUsd / optimal).toFixed(2)}× optimal (goal ≤ 1.3×) |`,
  );
  const compactOnly = await managedRun(steps, { compact: { atFraction: 0.5 } });
  const compactOptimal = cacheOptimal(compactOnly.answered);
  console.log(
    `| compaction only (at 0.5; its own cache-optimal bound ${fmt(compactOptimal)}) | ${fmt(compactOnly.result.costUsd)} | ${(compactOnly.result.costUsd / compactOptimal).toFixed(2)}× its optimal |`,
  );
  if (compactOnly.result.status !== "completed" || compactOnly.refused > 0) failed = true;
  console.log(
    `| no management: refused at step ${unmanaged.result.steps + 1} (${unmanaged.result.status}), spent until then | ${fmt(spentBefore)} | — |`,
  );
  console.log(
    `| no management, history cut to the window from then on | ${fmt(cutOff)} | managed is ${(run.result.costUsd / cutOff).toFixed(2)}× of it (goal ≤ 0.5×) |`,
  );
  console.log(
    `| no management on a window big enough for it all (cache-optimal, extrapolated from the first ${grown.length} steps) | ${fmt(big)} | managed is ${(run.result.costUsd / big).toFixed(2)}× of it |`,
  );
  const compactions = run.answered.filter((request) => request.body.tool_choice?.type === "none");
  console.log(
    `\n(${run.answered.length} answered requests, ${compactions.length} of them compactions; ${run.refused} refused as too long. Compaction only: ${compactOnly.answered.filter((request) => request.body.tool_choice?.type === "none").length} compactions, ${compactOnly.refused} refused.)`,
  );
}

// 4. Server-side clearing (where: "server": the API clears, the requests carry every result)
//    against the same clearing made by the loop, 200 steps (60 with --quick), USD side by side.
if (part("server")) {
  const steps = quick ? 60 : 200;
  console.log(
    `\n## Tool-result clearing, server-side vs client-side (${steps} steps, 20 KB results)\n`,
  );
  console.log(
    "| clearing (keep 5, at 0.5 of 200k) | USD | largest prompt read | largest request body | refused |",
  );
  console.log("|---|---|---|---|---|");
  const rows = [];
  for (const where of ["client", "server"]) {
    const run = await managedRun(steps, {
      clearToolResults: { keepLast: 5, atFraction: 0.5, where },
    });
    const read = Math.max(
      ...run.answered.map((request) => testing.loopbackTokenCount(request.prompt ?? request.body)),
    );
    const bytes = Math.max(...run.calls.map((request) => Buffer.byteLength(request.rawBody)));
    rows.push(run.result.costUsd);
    console.log(
      `| ${where} | ${fmt(run.result.costUsd)} | ${read} tokens | ${(bytes / 1e6).toFixed(2)} MB | ${run.refused} |`,
    );
    if (run.result.status !== "completed" || run.refused > 0) failed = true;
  }
  console.log(`\n(server-side costs ${(rows[1] / rows[0]).toFixed(2)}× the client-side clearing)`);
}

// 3. Loop CPU per step below the threshold.
if (part("cpu")) {
  const steps = quick ? 300 : 1000;
  const repeats = quick ? 5 : 9;
  const small = core.tool({
    name: "fetch_page",
    description: "Fetch a page.",
    input: v.object({ n: v.number() }),
    run: async ({ n }) => `page ${n}: short`,
  });
  const once = async (contextWindow) => {
    const modelForRun = testing.scriptedModel(
      (request) => {
        const next = lastCall(request.messages) + 1;
        return next > steps
          ? { content: "done" }
          : {
              content: [
                { type: "tool_use", id: `call_${next}`, name: "fetch_page", input: { n: next } },
              ],
            };
      },
      { copyRequests: false, noStream: true },
    );
    const agent = core.createAgent({
      model: modelForRun,
      tools: [small],
      store: testing.memoryEventStore(),
      ...(contextWindow ? { contextWindow } : {}),
    });
    const before = process.cpuUsage();
    const result = await agent.run("Read the report.");
    const used = process.cpuUsage(before);
    if (result.status !== "completed") throw new Error(`run ended ${result.status}`);
    return (used.user + used.system) / result.steps;
  };
  const on = [];
  const off = [];
  await once(undefined);
  await once({ maxInputTokens: 10_000_000, ...managed });
  // Alternate which goes first, and collect garbage between runs when node runs with --expose-gc.
  for (let index = 0; index < repeats; index += 1) {
    const pair = [
      async () => off.push(await once(undefined)),
      async () => on.push(await once({ maxInputTokens: 10_000_000, ...managed })),
    ];
    if (index % 2 === 1) pair.reverse();
    for (const run of pair) {
      globalThis.gc?.();
      await run();
    }
  }
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  const ratios = on.map((value, index) => value / off[index]);
  console.log(
    `\n# Loop CPU per step below the threshold (${steps} steps, ${repeats} interleaved repeats)\n`,
  );
  console.log("| management | CPU µs per step (median) |\n|---|---|");
  console.log(`| off | ${median(off).toFixed(0)} |`);
  console.log(`| on (never reaches its threshold) | ${median(on).toFixed(0)} |`);
  console.log(
    `\non/off: median of paired ratios ${median(ratios).toFixed(3)}× (min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)}); goal ≤ 1.1×`,
  );
}
if (failed) {
  console.error("\nFAILED: a request went over the window or the long run did not complete");
  process.exit(1);
}
