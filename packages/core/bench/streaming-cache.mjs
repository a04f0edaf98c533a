#!/usr/bin/env node
// Streaming and conversation caching, measured against the caching loopback Messages API server
// (real @anthropic-ai/sdk, real HTTP, server-sent events). Build first:
//   pnpm --filter @loopguard/core build && node packages/core/bench/streaming-cache.mjs [--quick]
//
// 1. Cost of a 50-step run with 2 KB tool outputs on Sonnet 5.5 prices: loopguard's default
//    (system, tools and the conversation's moving tail cached), system + tools only (the old
//    behaviour), caching off, the AI SDK's Anthropic provider with its defaults, and the
//    cache-optimal lower bound.
// 2. Time from the first content_block_delta written to the socket to the first text-delta the
//    host sees (p50, p90), with no redaction and with the delta filter's holdback.
// 3. Memory of 1,000 concurrent streaming runs, at two history lengths.
// Nothing here asserts anything about time: figures are printed side by side as ratios.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import * as v from "valibot";

const dist = new URL("../dist/", import.meta.url);
const core = await import(new URL("index.js", dist).href);
const testing = await import(new URL("testing/index.js", dist).href);
const anthropic = await import(new URL("anthropic/index.js", dist).href);
const { default: Anthropic } = await import("@anthropic-ai/sdk");
const quick = process.argv.includes("--quick");
const key = "sk-ant-bench-not-a-real-key";
const model = "claude-sonnet-5-5";
const price = core.claudePrices[model];

const fetchPage = core.tool({
  name: "fetch_page",
  description: "Fetch one page of the customer's order history.",
  input: v.object({ page: v.number() }),
  idempotent: true,
  // About 2 KB of output per call.
  run: async ({ page }) =>
    Array.from(
      { length: 24 },
      (_, line) => `order A${page}${line} shipped 2026-11-${(line % 28) + 1} total 89.99`,
    ).join("\n"),
});
const system =
  "You are Acme Shop's support agent. Read the customer's order history page by page and summarise it. " +
  "Be precise about order ids, dates and totals; never invent an order.";

/** The server's replies for a run of `steps` model calls: tool calls, then a final answer. */
const script = (steps) => (request) => {
  const turns = request.body.messages.filter((message) => message.role === "assistant").length;
  if (turns + 1 >= steps)
    return { content: `I read ${turns} pages of your order history; everything shipped.` };
  return {
    content: [
      { type: "text", text: `Reading page ${turns + 1}.` },
      {
        type: "tool_use",
        id: `toolu_${String(turns + 1).padStart(4, "0")}`,
        name: "fetch_page",
        input: { page: turns + 1 },
      },
    ],
    usage: undefined,
  };
};

const stripMessageBreakpoints = (body) => ({
  ...body,
  messages: body.messages.map((message) =>
    typeof message.content === "string"
      ? message
      : {
          ...message,
          content: message.content.map(({ cache_control, ...block }) => block),
        },
  ),
});

async function loopguardRun(mode, steps) {
  const server = await testing.messagesApiServer({ handler: script(steps) });
  try {
    const options = { model, maxTokens: 1024 };
    let modelOptions;
    if (mode === "off")
      modelOptions = { ...options, baseURL: server.url, apiKey: key, cache: false };
    else if (mode === "system+tools") {
      // Today's behaviour before this change: breakpoints on the system prompt and tools only.
      const client = new Anthropic({ baseURL: server.url, apiKey: key, maxRetries: 0 });
      modelOptions = {
        ...options,
        client: {
          messages: {
            create: (body, callOptions) =>
              client.messages.create(stripMessageBreakpoints(body), callOptions),
          },
        },
      };
    } else modelOptions = { ...options, baseURL: server.url, apiKey: key };
    const agent = core.createAgent({
      model: anthropic.claudeModel(modelOptions),
      tools: [fetchPage],
      system,
      budget: { maxSteps: steps + 1 },
    });
    const result = await agent.run("Summarise my order history, page by page.");
    if (result.status !== "completed")
      throw new Error(`run ended ${result.status}: ${result.error ?? result.why}`);
    return { costUsd: result.costUsd, usages: server.requests.map((request) => request.usage) };
  } finally {
    await server.close();
  }
}

async function aiSdkRun(steps) {
  // The AI SDK's Anthropic provider with its defaults (no cache_control unless asked per message).
  const require = createRequire(new URL("../../ai-sdk/package.json", import.meta.url));
  let ai;
  let provider;
  try {
    ai = await import(pathToFileURL(require.resolve("ai")).href);
    provider = await import(pathToFileURL(require.resolve("@ai-sdk/anthropic")).href);
  } catch (error) {
    return { skipped: `the AI SDK is not installed beside packages/ai-sdk (${error.message})` };
  }
  const server = await testing.messagesApiServer({ handler: script(steps) });
  try {
    const anthropicProvider = provider.createAnthropic({
      baseURL: `${server.url}/v1`,
      apiKey: key,
    });
    const { z } = await import(pathToFileURL(require.resolve("zod")).href);
    await ai.generateText({
      model: anthropicProvider(model),
      system,
      prompt: "Summarise my order history, page by page.",
      maxOutputTokens: 1024,
      maxRetries: 0,
      tools: {
        fetch_page: ai.tool({
          description: "Fetch one page of the customer's order history.",
          inputSchema: z.object({ page: z.number() }),
          execute: async ({ page }) => fetchPage.run({ page }, {}),
        }),
      },
      stopWhen: ai.stepCountIs(steps + 1),
    });
    const costUsd = server.requests.reduce(
      (sum, request) => sum + core.costOf(request.usage, price),
      0,
    );
    return { costUsd, requests: server.requests.length };
  } finally {
    await server.close();
  }
}

/**
 * The cheapest any client could pay for the same prompts: every token already sent is read from
 * the cache; every new token is written once (5-minute price) when a later step reads it, or
 * billed as plain input on the last step; output as reported.
 */
function cacheOptimal(usages) {
  let previous = 0;
  let cost = 0;
  usages.forEach((usage, index) => {
    const total =
      usage.input_tokens +
      (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0);
    const fresh = total - previous;
    const last = index === usages.length - 1;
    cost +=
      (previous * price.cacheReadPerMTok +
        fresh * (last ? price.inputPerMTok : price.cacheWrite5mPerMTok) +
        usage.output_tokens * price.outputPerMTok) /
      1_000_000;
    previous = total;
  });
  return cost;
}

const fmt = (usd) => `$${usd.toFixed(4)}`;
const steps = 50;
const only = process.argv
  .find((arg) => arg.startsWith("--only="))
  ?.slice(7)
  .split(",");
const part = (name) => !only || only.includes(name);
if (part("cost")) await costs();

async function costs() {
  console.log(
    `# Conversation caching: ${steps}-step run, ~2 KB tool outputs, ${model} prices (${core.priceTableDate})\n`,
  );
  const cached = await loopguardRun("default", steps);
  const systemTools = await loopguardRun("system+tools", steps);
  const off = await loopguardRun("off", steps);
  const aiSdk = await aiSdkRun(steps);
  const optimal = cacheOptimal(cached.usages);
  const rows = [
    ["cache-optimal lower bound", optimal],
    ["loopguard (system + tools + moving tail)", cached.costUsd],
    ["system + tools only (before)", systemTools.costUsd],
    ["caching off", off.costUsd],
  ];
  if (aiSdk.costUsd !== undefined)
    rows.push(["AI SDK Anthropic provider, defaults", aiSdk.costUsd]);
  console.log("| configuration | cost | × optimal |\n|---|---|---|");
  for (const [name, cost] of rows)
    console.log(`| ${name} | ${fmt(cost)} | ${(cost / optimal).toFixed(2)}× |`);
  if (aiSdk.skipped) console.log(`\n(AI SDK row skipped: ${aiSdk.skipped})`);
  const totals = cached.usages.reduce(
    (sum, usage) => ({
      read: sum.read + (usage.cache_read_input_tokens ?? 0),
      write: sum.write + (usage.cache_creation_input_tokens ?? 0),
      input: sum.input + usage.input_tokens,
    }),
    { read: 0, write: 0, input: 0 },
  );
  console.log(
    `\nloopguard's ${cached.usages.length} requests: ${totals.read} tokens read from cache, ${totals.write} written, ${totals.input} plain input.`,
  );
}

if (
  typeof core.createAgent({ model: testing.scriptedModel([]), tools: [] }).stream === "function"
) {
  if (part("latency")) await timeToFirstDelta();
  if (part("memory")) await concurrentMemory();
} else {
  console.log(
    "\n(agent.stream is not available in this build: streaming latency and memory skipped)",
  );
}

async function timeToFirstDelta() {
  const runs = quick ? 30 : 200;
  console.log(
    `\n# Time to first text-delta at the host vs first content_block_delta on the socket (${runs} runs each)\n`,
  );
  // Personal data and a secret at varying places, streamed in 1 to 12-character deltas, so
  // values are split across deltas in every way; "leaks" counts runs whose shown text held one.
  const secret = "sk-ant-api03-Zx9QwErTyUiOp0123456789AbCdEfGhIjKl";
  const email = "jane.doe@example.com";
  const textFor = (run) =>
    `${"Your order A1001 shipped on 2026-11-27. ".repeat(run % 3)}Write to ${email} if the key ${secret} fails. ${"It should arrive by Friday. ".repeat(6)}`;
  const measure = async (label, agentOptions, checkLeaks) => {
    const gaps = [];
    let leaks = 0;
    let call = 0;
    const server = await testing.messagesApiServer({
      handler: () => {
        call += 1;
        return {
          type: "message",
          message: { content: textFor(call) },
          stream: { chunkChars: 1 + (call % 12), eventDelayMs: 1 },
        };
      },
    });
    try {
      const agent = core.createAgent({
        model: anthropic.claudeModel({ model, baseURL: server.url, apiKey: key }),
        tools: [],
        ...agentOptions,
      });
      for (let run = 0; run < runs; run += 1) {
        const stream = agent.stream("Where is my order?");
        let first;
        let shown = "";
        for await (const event of stream) {
          if (event.type !== "text-delta") continue;
          first ??= performance.now();
          shown += event.text;
        }
        await stream.result;
        if (shown.includes(email) || shown.includes(secret.slice(0, 20))) leaks += 1;
        const socket = server.requests.at(-1).firstDeltaAt;
        gaps.push(first - socket);
      }
    } finally {
      await server.close();
    }
    gaps.sort((a, b) => a - b);
    const at = (q) => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))];
    console.log(
      `| ${label} | ${at(0.5).toFixed(2)} ms | ${at(0.9).toFixed(2)} ms | ${checkLeaks ? `${leaks}/${runs}` : "n/a"} |`,
    );
  };
  console.log(
    "| host sees | p50 gap | p90 gap | runs leaking the e-mail or key |\n|---|---|---|---|",
  );
  await measure("no redaction (text passes straight through)", {}, false);
  let redactModule;
  try {
    redactModule = await import(new URL("../../redact/dist/index.js", import.meta.url).href);
  } catch (error) {
    console.log(`(@loopguard/redact rows skipped: build it first, ${error.message})`);
    return;
  }
  await measure(
    `vault + createRedactor() from @loopguard/redact (holdback ${core.defaultStreamHoldBack ?? 64} characters)`,
    { vault: redactModule.createVault(), redact: redactModule.createRedactor() },
    true,
  );
  await measure(
    "createRedactionStream({ holdBack: 256 }) as redactStream",
    { redactStream: () => redactModule.createRedactionStream({ holdBack: 256 }) },
    true,
  );
}

async function concurrentMemory() {
  const runs = quick ? 200 : 1000;
  console.log(
    `\n# ${runs} concurrent streaming runs in one process (scripted streaming model, in-memory store)\n`,
  );
  console.log(
    "Heap measured while every run is in flight (all waiting on their final streamed answer).\n",
  );
  console.log("| history per run | heap in flight (MB) | per run (KB) |\n|---|---|---|");
  const perRun = [];
  for (const toolSteps of [2, 8, 16]) {
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    let waiting = 0;
    let release;
    const gate = new Promise((resolve) => {
      release = resolve;
    });
    const script = async (_request, call) => {
      if (call <= toolSteps)
        return {
          content: [
            { type: "tool_use", id: `toolu_${call}`, name: "fetch_page", input: { page: call } },
          ],
        };
      waiting += 1;
      await gate;
      return { content: "All pages read; everything shipped." };
    };
    const done = [];
    for (let run = 0; run < runs; run += 1) {
      const agent = core.createAgent({
        model: testing.scriptedModel(script, { copyRequests: false }),
        tools: [fetchPage],
      });
      const stream = agent.stream("Read my order history.");
      done.push(
        (async () => {
          let deltas = 0;
          for await (const event of stream) if (event.type === "text-delta") deltas += 1;
          return { result: await stream.result, deltas };
        })(),
      );
    }
    while (waiting < runs) await new Promise((resolve) => setTimeout(resolve, 20));
    globalThis.gc?.();
    const inFlight = process.memoryUsage().heapUsed;
    release();
    const results = await Promise.all(done);
    const completed = results.filter(({ result }) => result.status === "completed").length;
    const kb = (inFlight - before) / 1024 / runs;
    perRun.push([toolSteps, kb]);
    console.log(
      `| ${toolSteps} tool steps (~${toolSteps * 2} KB of tool output) | ${(inFlight / 2 ** 20).toFixed(1)} | ${kb.toFixed(1)} |${completed === runs ? "" : ` (${runs - completed} runs did not complete)`}`,
    );
  }
  const [first, , last] = perRun;
  console.log(
    `\nGrowth per extra tool step: ${((last[1] - first[1]) / (last[0] - first[0])).toFixed(1)} KB per run (linear in history if the three rows lie on one line).`,
  );
}
