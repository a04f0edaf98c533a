// Microseconds per call of createRedactor() on what loopguard core hands it for every span: a
// span-shaped object with ~20 short string attributes (ids, tool names, reasons, decisions)
// and two 2 KB contents (tool arguments and a tool result, with an email and an order id).
// Also one 2 KB string alone. Median of many calls.
//
//   pnpm --filter @loopguard/redact bench:call
//   node bench/per-call.mjs --baseline /path/to/other/dist/index.js   # side by side
//
// Prints figures; asserts nothing about time.
import { performance } from "node:perf_hooks";

const paragraph =
  "Section 4.2 of the handbook explains how returns are processed for orders shipped within the European Union. " +
  "Customers may return any item within thirty days of delivery, provided the packaging is intact and the receipt is attached. " +
  "The warehouse checks each parcel on arrival and the refund goes back to the original payment method within five business days. ";
const prose = paragraph.repeat(20).slice(0, 2048);
const order = [
  "Order A1001-7731 (placed 2026-03-14 09:12 UTC) for Jane Miller, jane.miller@acme-shop.com.",
  "Status: delivered on 18 March by DHL Express; signed for at the front desk.",
  "Items: 1 x ErgoChair Pro (graphite), 89.99 EUR; 2 x Lumbar cushion, 19.50 EUR each; total 133.89 EUR.",
  "Customer message: the chair arrived with a cracked base and one of the wheels is missing. Could you send a replacement base?",
  "Agent note: photos confirm transit damage; carrier claim CL-55812 opened. Return policy: thirty days from delivery.",
]
  .join("\n")
  .repeat(5)
  .slice(0, 2048);

function span(step) {
  return {
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: "00f067aa0ba902b7",
    parentSpanId: "a3ce929d0e0e4736",
    kind: "tool",
    name: "execute_tool lookup_order",
    startTime: 1764512345678 + step,
    endTime: 1764512345690 + step,
    status: "ok",
    attributes: {
      "loopguard.run_id": "run_01JDQ4Z8Y7X6W5V4T3S2R1Q0P9",
      "loopguard.session": "sess_7f3a",
      "loopguard.step": step,
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup_order",
      "gen_ai.tool.call.id": `toolu_01A09q90qw90lq917835lq9${step % 10}`,
      "gen_ai.system": "anthropic",
      "gen_ai.request.model": "claude-sonnet-5-5",
      "loopguard.decision": "policy run_guard taint",
      "loopguard.idempotency_key": `run_01JDQ4Z8:toolu_${step % 10}`,
      "loopguard.tool.sensitive": "false",
      "loopguard.injection.verdict": "clean",
      "loopguard.injection.scanner": "heuristic",
      "loopguard.outcome": "allow",
      "loopguard.reason": "allowed by rule fetch_*",
      "loopguard.source": "tool_output",
      "loopguard.envelope": "quarantine",
      "loopguard.retry.policy": "exponential",
      "loopguard.breaker.state": "closed",
      "loopguard.budget.remaining_usd": "4.75",
      "loopguard.model": "claude-sonnet-5-5",
    },
    events: [
      {
        name: "loopguard.gate",
        time: 1764512345680 + step,
        attributes: { "loopguard.outcome": "allow", "loopguard.passed": ["policy", "run_guard"] },
      },
    ],
    // Contents differ on every call (as tool results usually do), so a cache of repeated
    // strings cannot skip them.
    content: {
      input: `${order.slice(0, 2040)} #${step}`,
      output: `${prose.slice(0, 2040)} #${step}`,
    },
  };
}

function usPerCall(fn, make, samples = 60, batch = 40) {
  let serial = 0;
  for (let index = 0; index < 400; index++) fn(make(serial++)); // warm-up
  const times = [];
  for (let sample = 0; sample < samples; sample++) {
    const inputs = Array.from({ length: batch }, () => make(serial++));
    // CPU time of this process, not wall time: on a shared machine other jobs' load does not count.
    const start = process.cpuUsage();
    for (let index = 0; index < batch; index++) fn(inputs[index]);
    const used = process.cpuUsage(start);
    times.push((used.user + used.system) / batch);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const baselineIndex = process.argv.indexOf("--baseline");
const targets = [["this build", new URL("../dist/index.js", import.meta.url).href]];
if (baselineIndex !== -1) targets.push(["baseline", process.argv[baselineIndex + 1]]);
const redactors = [];
for (const [label, path] of targets) {
  const { createRedactor } = await import(path);
  redactors.push([label, createRedactor()]);
}

console.log(
  "createRedactor() per call, µs (median of 60 batches of 40, best of 2 interleaved rounds)",
);
console.log(
  `| input | ${redactors.map(([label]) => `${label} µs`).join(" | ")} |${redactors.length > 1 ? " baseline ÷ this |" : ""}`,
);
console.log(`|---|${redactors.map(() => "---:").join("|")}|${redactors.length > 1 ? "---:|" : ""}`);
for (const [name, make] of [
  ["span: 21 short attributes, an event, two 2 KB contents", (index) => span(index)],
  ["one 2 KB order record (string)", (index) => `${order.slice(0, 2040)} #${index}`],
  ["one 2 KB page of prose (string)", (index) => `${prose.slice(0, 2040)} #${index}`],
]) {
  const results = redactors.map(() => Number.POSITIVE_INFINITY);
  for (let round = 0; round < 2; round++)
    redactors.forEach(([, redactor], index) => {
      results[index] = Math.min(results[index], usPerCall(redactor, make));
    });
  console.log(
    `| ${name} | ${results.map((us) => us.toFixed(1)).join(" | ")} |${results.length > 1 ? ` ${(results[1] / results[0]).toFixed(2)}x |` : ""}`,
  );
}
const sample = redactors[0][1](span(1));
console.log(`\nsample output: ${JSON.stringify(sample.content.input).slice(0, 120)}…`);
