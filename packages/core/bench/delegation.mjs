#!/usr/bin/env node
// What delegating a call to another agent (agent.asTool) costs, beside a tool doing the same work
// inline. Build core first (pnpm --filter @loopguard/core build), then:
//   node --expose-gc packages/core/bench/delegation.mjs [--quick]
//
// CPU: N parent runs, one after another (an inline one, a delegated one, in turn), each of one tool call (two model steps: the call and
// the answer). "inline": the tool returns the answer itself. "delegated": the tool is a child
// agent (asTool) whose model returns the same answer in one step. The models answer at once (no
// network), so the figures are the loop's own CPU; short conversations on both sides.
//   plain step CPU    = CPU of the inline runs / their 2N model steps (one loop step, tool included)
//   delegation cost   = (CPU of the delegated runs - CPU of the inline runs) / N (one child run:
//                       its start, its one step, its end, the links and the events in both logs)
//   ratio             = delegation cost / plain step CPU; the goal is <= 2.
// Memory: K calls in flight at once, each waiting on a promise the bench holds (a child parked in
// its model call vs an inline tool parked in its handler); retained heap (after gc) per call,
// delegated minus inline: the memory of a live child beyond its steps (its loop links, budget
// node, writer and fold with its run-start). Goal <= 8 KB.
// Each figure is the median of several rounds, both variants measured in the same round.
const dist = (path = "index.js") => import(new URL(`../dist/${path}`, import.meta.url).href);
const { createAgent, tool } = await dist();
const { memoryEventStore } = await dist("testing/index.js");
const v = await import("valibot");

const quick = process.argv.includes("--quick");
const steps = quick ? 50 : 200;
const rounds = quick ? 3 : 7;
const inFlight = quick ? 200 : 1_000;
const usage = { input_tokens: 10, output_tokens: 10 };
const answer = "Order A1 shipped on Monday from the Leipzig warehouse.";

function message(index, content, toolTurn) {
  return {
    id: `msg_${index}`,
    type: "message",
    role: "assistant",
    model: "claude-sonnet-5-5",
    content,
    stop_reason: toolTurn ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage,
  };
}

/** A parent model that calls `work` `calls` times, one call per step, then answers. */
function parentModel(calls) {
  return {
    name: "bench",
    model: "claude-sonnet-5-5",
    async create(request) {
      const done = request.messages.filter((item) => item.role === "assistant").length;
      return done < calls
        ? message(
            done,
            [
              {
                type: "tool_use",
                id: `toolu_${done}`,
                name: "work",
                input: { task: `Look up order ${done}` },
              },
            ],
            true,
          )
        : message(done, [{ type: "text", text: "done" }], false);
    },
  };
}

/** A child model that answers in one step; `gate` (when given) holds the answer until it opens. */
function childModel(gate) {
  return {
    name: "bench",
    model: "claude-sonnet-5-5",
    async create() {
      if (gate) await gate.promise;
      return message(0, [{ type: "text", text: answer }], false);
    },
  };
}

function opened() {
  let open;
  const promise = new Promise((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

function inlineParent(calls, store, gate) {
  const work = tool({
    name: "work",
    description: "Does the work.",
    input: v.object({ task: v.string() }),
    timeoutMs: 600_000,
    run: async () => {
      if (gate) await gate.promise;
      return answer;
    },
  });
  return createAgent({ model: parentModel(calls), tools: [work], store });
}

function delegatedParent(calls, store, gate) {
  const child = createAgent({ model: childModel(gate), tools: [], agentId: "worker", store });
  return createAgent({
    model: parentModel(calls),
    tools: [child.asTool({ name: "work", description: "Does the work." })],
    agentId: "lead",
    store,
  });
}

/** CPU (ms) of one run, measured alone. */
async function cpuOfRun(agent) {
  const before = process.cpuUsage();
  const result = await agent.run("Look the order up.");
  const cpu = process.cpuUsage(before);
  if (result.status !== "completed")
    throw new Error(`bench run ended ${result.status}: ${result.error}`);
  return (cpu.user + cpu.system) / 1000;
}

/**
 * One round: `steps` inline runs and `steps` delegated runs of one call each, interleaved (an
 * inline run, then a delegated one), so drift on a loaded machine falls on both alike.
 */
async function cpuRound(inlineAgent, delegatedAgent) {
  let inline = 0;
  let delegated = 0;
  for (let index = 0; index < steps; index += 1) {
    inline += await cpuOfRun(inlineAgent);
    delegated += await cpuOfRun(delegatedAgent);
  }
  return { inline, delegated };
}

async function heapPerCall(make) {
  const store = memoryEventStore({ maxFinishedRuns: 10_000 });
  const gate = opened();
  const held = gate.promise;
  const agent = make(1, store, gate);
  // Warm the agent first (the child's loop is made on its first call), then hold the calls.
  gate.promise = Promise.resolve();
  await agent.run("Warm up.");
  gate.promise = held;
  globalThis.gc?.();
  globalThis.gc?.();
  const base = process.memoryUsage().heapUsed;
  // One agent (made before the baseline), K runs of one call each, all parked inside the call.
  const runs = [];
  for (let index = 0; index < inFlight; index += 1)
    runs.push(agent.run("Look the order up.", { runId: `run_${index}` }));
  await new Promise((resolve) => setTimeout(resolve, 50));
  globalThis.gc?.();
  globalThis.gc?.();
  const used = process.memoryUsage().heapUsed - base;
  gate.open();
  await Promise.all(runs);
  return used / inFlight;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// One agent per variant; warm both paths (JIT), then measure.
const inlineAgent = inlineParent(1, memoryEventStore({ maxFinishedRuns: 100 }));
const delegatedAgent = delegatedParent(1, memoryEventStore({ maxFinishedRuns: 100 }));
await cpuRound(inlineAgent, delegatedAgent);
const inline = [];
const delegated = [];
for (let round = 0; round < rounds; round += 1) {
  globalThis.gc?.();
  const figures = await cpuRound(inlineAgent, delegatedAgent);
  inline.push(figures.inline);
  delegated.push(figures.delegated);
}
const inlineMs = median(inline);
const delegatedMs = median(delegated);
// Each inline run takes two model steps (the call, the answer) and one tool call.
const stepMs = inlineMs / (2 * steps);
const perChildMs = (delegatedMs - inlineMs) / steps;

const heapInline = [];
const heapDelegated = [];
for (let round = 0; round < Math.min(rounds, 3); round += 1) {
  heapInline.push(await heapPerCall(inlineParent));
  heapDelegated.push(await heapPerCall(delegatedParent));
}
const perChildBytes = median(heapDelegated) - median(heapInline);

const fmt = (value, digits = 3) => value.toFixed(digits);
console.log(
  `delegation bench (${quick ? "quick" : "full"}: ${steps} one-call runs per variant, ${rounds} rounds, ${inFlight} calls in flight for memory; node ${process.version}; gc ${globalThis.gc ? "exposed" : "NOT exposed: memory figures are noisy"})`,
);
console.log("");
console.log("                          inline tool     delegated (asTool)");
console.log(
  `CPU of ${steps} runs (ms)      ${fmt(inlineMs, 1).padStart(10)}     ${fmt(delegatedMs, 1).padStart(10)}`,
);
console.log(
  `heap per call in flight     ${fmt(median(heapInline) / 1024, 2).padStart(8)} KB    ${fmt(median(heapDelegated) / 1024, 2).padStart(8)} KB`,
);
console.log("");
console.log(`plain loop step CPU:           ${fmt(stepMs)} ms`);
console.log(
  `delegation cost per child run: ${fmt(perChildMs)} ms  = ${fmt(perChildMs / stepMs, 2)}x a plain step (goal <= 2x: ${perChildMs / stepMs <= 2 ? "met" : "NOT met"})`,
);
console.log(
  `memory per live child beyond an inline call: ${fmt(perChildBytes / 1024, 2)} KB (goal <= 8 KB: ${perChildBytes <= 8 * 1024 ? "met" : "NOT met"})`,
);
// A goal not met fails the bench (exit code 1), so a regression cannot pass unnoticed.
if (perChildMs / stepMs > 2 || perChildBytes > 8 * 1024) process.exitCode = 1;
