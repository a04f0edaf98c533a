// The parser-differential bench: `node bench/parser-differential.mjs [cases]`
// (default 100,000) after `pnpm --filter @loopguard/injection build`.
//
// Generates sink arguments from a task's trusted values with the attacker's tricks (see
// sink-tricks.mjs), asks the built taint gate, and reads every admitted argument with the
// sinks' own parsers (the oracle). Prints admitted and refused counts and every violation (an
// admitted argument that reaches a host, mailbox, registrable domain or number the task did not
// name). To show the oracle can fail, the same cases go through a naive check (the trusted
// host appears in the argument as text: what an extractor that stops at "}" or "@" sees); its
// violations must be many. Exits 1 when the gate has any violation.

import { RunState } from "@loopguard/core/plugin";
import fc from "fast-check";
import { taintGate } from "../dist/index.js";
import {
  sinkTrickCase,
  trickSinks,
  trickToolOf,
  trustedTargets,
  untrustedReach,
} from "./sink-tricks.mjs";

const cases = Number(process.argv[2] ?? 100_000);
const gate = taintGate({ sinks: trickSinks });
const toolOf = trickToolOf;

/** The naive check: the trusted value appears in the argument's text (what the old extractor compared). */
function naiveAdmits(testCase) {
  const text = String(testCase.value).toLowerCase();
  const want = {
    url: testCase.trusted.url,
    email: testCase.trusted.email,
    domain: testCase.trusted.host,
    host: testCase.trusted.host,
    phone: testCase.trusted.phone.replace(/ /g, "").slice(-9),
  }[testCase.sinkKind];
  const haystack = testCase.sinkKind === "phone" ? text.replace(/[^0-9]/g, "") : text;
  return haystack.startsWith(want.toLowerCase()) || haystack.includes(want.toLowerCase());
}

const samples = fc.sample(sinkTrickCase, { numRuns: cases, seed: 20261201 });
const result = {
  cases,
  gate: { admitted: 0, refused: 0, violations: 0, byKind: {} },
  naive: { admitted: 0, violations: 0 },
  examples: [],
};
const started = performance.now();
for (const testCase of samples) {
  const run = new RunState({ runId: "run_b", agentId: "bench", task: testCase.task });
  const [tool, argument] = toolOf[testCase.sinkKind];
  const decision = gate.check({
    tool,
    args: { [argument]: testCase.value },
    toolUseId: "t",
    idempotencyKey: "run_b:t",
    sensitive: false,
    idempotent: false,
    run,
  });
  const targets = trustedTargets(testCase.trusted);
  const bad = untrustedReach(testCase.sinkKind, testCase.value, targets);
  result.gate.byKind[testCase.sinkKind] ??= {
    admitted: 0,
    refused: 0,
    harmful: 0,
    refusedHarmless: 0,
  };
  const kind = result.gate.byKind[testCase.sinkKind];
  if (bad.length > 0) kind.harmful += 1;
  // Refused although every reading reaches only trusted targets (a cost, not a hole: a list
  // of trusted values with an odd separator, an encoded form the gate will not decode).
  else if (decision.type !== "allow") kind.refusedHarmless += 1;
  if (decision.type === "allow") {
    result.gate.admitted += 1;
    kind.admitted += 1;
    if (bad.length > 0) {
      result.gate.violations += 1;
      if (result.examples.length < 10) result.examples.push({ value: testCase.value, bad });
    }
  } else {
    result.gate.refused += 1;
    kind.refused += 1;
  }
  if (naiveAdmits(testCase)) {
    result.naive.admitted += 1;
    if (bad.length > 0) result.naive.violations += 1;
  }
}
result.seconds = +((performance.now() - started) / 1000).toFixed(1);
console.log(JSON.stringify(result, null, 2));
if (result.naive.violations === 0)
  console.error("the naive check had no violation: the oracle or the generators are broken");
process.exitCode = result.gate.violations > 0 || result.naive.violations === 0 ? 1 : 0;
