// Cost of one check of each policy gate, side by side with a hand-written baseline.
// Run from packages/policy: `npx tsc -p tsconfig.build.json && node bench/check.mjs [calls]`.
// Prints figures; asserts nothing about time.
import { performance } from "node:perf_hooks";
import { digestOf, RunState } from "@loopguard/core/plugin";
import {
  allow,
  argDomainNotIn,
  argGt,
  argIn,
  ask,
  deny,
  policy,
  rateLimit,
  runGuard,
} from "../dist/index.js";
import { compileGlob } from "../dist/internal/index.js";

const calls = Number(process.argv[2] ?? 200_000);

function time(fn) {
  for (let index = 0; index < 5_000; index += 1) fn(index); // warm up
  const started = performance.now();
  for (let index = 0; index < calls; index += 1) fn(index);
  return ((performance.now() - started) * 1000) / calls; // microseconds per call
}

const callOf = (tool, args, run) => ({
  tool,
  args,
  toolUseId: "t",
  idempotencyKey: "r:t",
  sensitive: false,
  idempotent: false,
  run,
});
const run = new RunState({ runId: "bench", agentId: "bench", roles: ["support"] });

// 50 rules: 48 globs that never match the call, plus the two of the README's example.
const rules = [];
for (let index = 0; index < 48; index += 1) rules.push(deny(`tool_${index}_*`));
rules.push(
  deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }),
  ask("issue_refund", { when: argGt("amount", 500) }),
  allow("lookup_*", { roles: ["support"] }),
);
const gate = policy(rules, { default: "deny" });
const email = callOf("send_email", { to: "ann@acme-shop.com", subject: "Hi" }, run);
const refund = callOf("issue_refund", { order_id: "A1001", amount: 89.99 }, run);
const handWritten = (call) => {
  if (call.tool === "send_email" && !/@acme-shop\.com$/.test(call.args.to)) return { type: "deny" };
  if (call.tool === "issue_refund" && call.args.amount > 500) return { type: "ask" };
  return { type: "allow" };
};
const baseline = time((index) => handWritten(index % 2 ? email : refund));
const policyCost = time((index) => gate.check(index % 2 ? email : refund));

const limiter = rateLimit({ tool: "send_*", perAgent: true, capacity: 1e9, refillPerSecond: 1e9 });
const keys = Array.from({ length: 1024 }, (_unused, index) => ({
  ...email,
  idempotencyKey: `r:t${index}`,
}));
const limiterCost = time((index) => {
  const call = keys[index % 1024];
  limiter.check(call);
  limiter.observe({ call, status: "ok", durationMs: 0 });
});

// The RunGuard's cost must not grow with the run's history.
const guard = runGuard();
const guardCost = (history) => {
  const state = new RunState({ runId: `h${history}`, agentId: "bench" });
  for (let index = 0; index < history; index += 1)
    state.calls.push({
      tool: "lookup_order",
      argsDigest: digestOf({ order_id: `A${index}` }),
      toolUseId: `c${index}`,
    });
  const call = callOf("lookup_order", { order_id: "A1" }, state);
  return time(() => guard.check(call));
};
const digestCost = time(() => digestOf(refund.args));
const guard50 = guardCost(50);
const guard50k = guardCost(50_000);

// List membership, compared normalised: a plain value, a spaced one, and one in
// full-width forms with a Cyrillic look-alike (the slow path), against a strict Set lookup.
const plans = ["basic", "pro", "enterprise", "team", "free"];
const planSet = new Set(plans);
const strictCost = time((index) => planSet.has(index % 2 ? "enterprise" : "starter"));
const inPlans = argIn("plan", plans);
const plainCost = time((index) =>
  inPlans.test({ plan: index % 2 ? "enterprise" : "starter" }, refund),
);
const spacedCost = time((index) =>
  inPlans.test({ plan: index % 2 ? "Enterprise  plan " : "starter plan" }, refund),
);
const wideCost = time((index) => {
  try {
    return inPlans.test({ plan: index % 2 ? "ＥＮＴＥＲＰＲＩＳＥ" : "еnterprise" }, refund);
  } catch {
    return true; // cannot decide: the rule fails closed
  }
});

// Globs against the regex people write for them, on a name built to make backtracking explode.
const glob = compileGlob("*a*a*a*a*a*a*a*a*b");
const regex = /^.*a.*a.*a.*a.*a.*a.*a.*a.*b$/;
const nasty = "a".repeat(30);
const globCost = time(() => glob.test(nasty));
const started = performance.now();
for (let index = 0; index < 10; index += 1) regex.test(nasty);
const regexCost = ((performance.now() - started) * 1000) / 10;

const row = (name, micros, versus) =>
  console.log(
    `${name.padEnd(44)} ${micros.toFixed(3).padStart(10)} µs${versus ? `   ${versus}` : ""}`,
  );
console.log(`policy gate checks, ${calls} calls each, Node ${process.version}`);
row("hand-written if/else (2 rules)", baseline);
row(
  "policy() check (51 rules, globs, predicates)",
  policyCost,
  `${(policyCost / baseline).toFixed(1)}x the hand-written baseline`,
);
row("rateLimit() check + observe", limiterCost);
row("digestOf(args) (core, the floor of run_loop)", digestCost);
row(
  "runGuard() check, 50 calls of history",
  guard50,
  `${(guard50 / digestCost).toFixed(2)}x digestOf`,
);
row(
  "runGuard() check, 50 000 calls of history",
  guard50k,
  `${(guard50k / guard50).toFixed(2)}x the 50-call run`,
);
row("Set.has (strict, the floor)", strictCost);
row(
  "argIn() test, plain ASCII value",
  plainCost,
  `${(plainCost / strictCost).toFixed(1)}x Set.has`,
);
row(
  "argIn() test, spaced ASCII value",
  spacedCost,
  `${(spacedCost / strictCost).toFixed(1)}x Set.has`,
);
row(
  "argIn() test, full-width / look-alike value",
  wideCost,
  `${(wideCost / strictCost).toFixed(1)}x Set.has`,
);
row(`glob "*a*a*a*a*a*a*a*a*b" on "a" x 30`, globCost);
row(
  `regex /^.*a.*a...*b$/ on "a" x 30`,
  regexCost,
  `${(regexCost / globCost).toFixed(0)}x the glob`,
);
