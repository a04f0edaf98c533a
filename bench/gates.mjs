// Gate pipeline cost per tool call under guardTool: `node gates.mjs [calls]`.
// Prints one JSON line with p50/p99 microseconds for each gate alone and the whole pipeline.
import { performance } from "node:perf_hooks";
import { guardTool, tool, withRun } from "@loopguard/core";
import { digestOf, judgeCall, RunState, sortGates } from "@loopguard/core/plugin";
import * as v from "valibot";
import { measureAdapters } from "./adapters.mjs";

const calls = Number(process.argv[2] ?? 20_000);
const policyPkg = await import("@loopguard/policy");
const injection = await import("@loopguard/injection");

const refund = tool({
  name: "issue_refund",
  description: "Refund an order.",
  input: v.object({ order_id: v.string(), amount: v.number(), reason: v.string() }),
  sensitive: true,
  run: async () => "ok",
});
const rules = [];
for (let index = 0; index < 48; index += 1) rules.push(policyPkg.deny(`tool_${index}_*`));
rules.push(
  policyPkg.deny("send_email", { when: policyPkg.argDomainNotIn("to", ["acme-shop.com"]) }),
);
rules.push(policyPkg.allow("issue_refund", { when: policyPkg.argGt("amount", 0) }));
const gates = {
  policy: policyPkg.policy(rules),
  run_guard: policyPkg.runGuard(),
  // The same RunGuard with no-progress detection on (goal: at most 2 us p50 more than run_guard).
  run_guard_no_progress: policyPkg.runGuard({ noProgress: true }),
};
gates.taint = injection.taintGate();

/** The gates of the pipeline rows: one RunGuard (the default one). */
function pipelineGates() {
  return Object.entries(gates)
    .filter(([name]) => name !== "run_guard_no_progress")
    .map(([, gate]) => gate);
}

function stats(samples) {
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { p50: +at(0.5).toFixed(2), p99: +at(0.99).toFixed(2) };
}

function makeRun(outputs = 20) {
  const run = new RunState({ runId: "bench", agentId: "bench" });
  // A realistic history: 20 earlier outputs (50 for the taint row), one in ten flagged, and 50 admitted calls.
  for (let index = 0; index < outputs; index += 1) {
    run.outputs.push({
      tool: "search_kb",
      toolUseId: `t${index}`,
      text: `Article ${index}: contact help${index}@acme-shop.com, order A${1000 + index}`,
      scan: { verdict: index % 10 === 0 ? "injection" : "clean", score: 0.1, rules: [] },
    });
  }
  for (let index = 0; index < 50; index += 1)
    run.calls.push({
      tool: "lookup_order",
      argsDigest: digestOf({ order_id: `A${index}` }),
      toolUseId: `c${index}`,
    });
  return run;
}

const result = { calls, gates: {} };

/** Microseconds per `check` of `calls` sensitive refund calls (the first 1,000 are warm-up). */
async function timeChecks(gate, run, argsOf) {
  const samples = [];
  for (let index = 0; index < calls; index += 1) {
    const call = {
      tool: "issue_refund",
      args: argsOf(index),
      toolUseId: `x${index}`,
      idempotencyKey: `bench:x${index}`,
      sensitive: true,
      idempotent: false,
      run,
    };
    const started = performance.now();
    await gate.check(call);
    samples.push((performance.now() - started) * 1000);
  }
  return stats(samples.slice(1000));
}
for (const [name, gate] of Object.entries(gates)) {
  // The taint check's goal is stated for a 50-output history.
  const run = makeRun(name === "taint" ? 50 : 20);
  result.gates[name] = await timeChecks(gate, run, (index) => ({
    order_id: `A${index}`,
    amount: 10 + (index % 50),
    reason: "damaged",
  }));
}
// The taint check with typed provenance sinks (the 15 us goal includes typed
// parsing): the same 50-output history under a task naming order A1000 and $25; calls
// alternate the task's order (admitted) and another (refused). Not part of the pipeline rows.
{
  const typed = injection.taintGate({
    sinks: [
      { tool: "issue_refund", args: { order_id: "id", amount: "amount" }, require: "trusted" },
    ],
  });
  const history = makeRun(50);
  const run = new RunState({ runId: "bench", agentId: "bench", task: "Refund order A1000, $25" });
  run.outputs.push(...history.outputs);
  run.calls.push(...history.calls);
  result.gates.taint_typed = await timeChecks(typed, run, (index) => ({
    order_id: index % 2 ? `B${index}` : "A1000",
    amount: 25,
    reason: "damaged",
  }));
}
{
  const run = makeRun();
  const sorted = sortGates(pipelineGates());
  const samples = [];
  for (let index = 0; index < calls; index += 1) {
    const call = {
      tool: "issue_refund",
      args: { order_id: `A${index}`, amount: 10 + (index % 50), reason: "damaged" },
      toolUseId: `x${index}`,
      idempotencyKey: `bench:x${index}`,
      sensitive: true,
      idempotent: false,
      run,
    };
    const started = performance.now();
    await judgeCall({
      call,
      tool: refund,
      gates: sorted,
      haltOn: ["kill_switch"],
      approve: async () => ({ type: "approve" }),
      onError: () => {},
    });
    samples.push((performance.now() - started) * 1000);
  }
  result.pipeline = stats(samples.slice(1000));
}
{
  const guarded = guardTool(refund, { gates: pipelineGates() });
  const samples = [];
  await withRun({ agentId: "bench" }, async () => {
    for (let index = 0; index < calls; index += 1) {
      const started = performance.now();
      const outcome = await guarded(
        { order_id: `A${index}`, amount: 10 + (index % 50), reason: "damaged" },
        { toolUseId: `g${index}` },
      );
      samples.push((performance.now() - started) * 1000);
      if (outcome.type !== "ok") throw new Error(`guarded call refused: ${outcome.reason}`);
    }
  });
  result.guardedCall = stats(samples.slice(1000));
}
// One guarded call through each adapter (AI SDK, Claude Agent SDK hooks, MCP), and the MCP proxy over stdio.
result.adapters = await measureAdapters({
  calls: Math.min(calls, 10_000),
  gates: pipelineGates,
  refund,
  stats,
});
console.log(JSON.stringify(result));
