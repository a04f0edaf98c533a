// What the vault's boundaries cost in the every-gate-on loop: `node --expose-gc bench/vault-overhead.mjs [N] [repeats]`
// (after `pnpm build`). The workload of loop-overhead.mjs (a model that calls a tool returning 2 KB
// N times, then answers), with every gate on, run in one process, interleaved, as:
//   - no vault;
//   - a vault (createVault from @loopguard/redact), the tool declaring `reveal: true` (it gets the
//     real values: the path every tool took before tools had to declare it);
//   - the same vault, the tool not declaring `reveal` (it gets tokens: the arguments are tokenised
//     again before the call, the check the vault's reveal rule added).
// The model's tool arguments carry a token (`<EMAIL_1>`) every call. Prints CPU µs per step
// (median of the repeats) and the ratios; asserts nothing.

import { createAgent, tool } from "@loopguard/core";
import { memoryEventStore } from "@loopguard/core/testing";
import { heuristicScanner, quarantine, taintGate } from "@loopguard/injection";
import { allow, deny, policy, runGuard } from "@loopguard/policy";
import { createRedactor, createVault } from "@loopguard/redact";
import * as v from "valibot";
import { prosePage } from "./payload.mjs";

const payload = prosePage(2048);

const n = Number(process.argv[2] ?? 1000);
const repeats = Number(process.argv[3] ?? 5);
const usage = { input_tokens: 10, output_tokens: 10 };

function agentFor(variant) {
  const fetchDoc = tool({
    name: "fetch_doc",
    description: "Fetch a page of a document for a reader.",
    input: v.object({ page: v.number(), reader: v.string() }),
    ...(variant === "reveal" ? { reveal: true } : {}),
    run: async () => payload,
  });
  const rules = [];
  for (let index = 0; index < 49; index += 1) rules.push(deny(`tool_${index}_*`));
  rules.push(allow("fetch_*"));
  const vault = variant === "none" ? undefined : createVault();
  return (steps) => {
    let call = 0;
    const model = {
      name: "bench",
      model: "claude-sonnet-5-5",
      async create() {
        call += 1;
        const content =
          call <= steps
            ? [
                {
                  type: "tool_use",
                  id: `toolu_${call}`,
                  name: "fetch_doc",
                  input: { page: call, reader: vault ? "<EMAIL_1>" : "jane.doe@acme.io" },
                },
              ]
            : [{ type: "text", text: "done" }];
        return {
          id: `msg_${call}`,
          type: "message",
          role: "assistant",
          model: "claude-sonnet-5-5",
          content,
          stop_reason: call <= steps ? "tool_use" : "end_turn",
          stop_sequence: null,
          usage,
        };
      },
    };
    return createAgent({
      model,
      tools: [fetchDoc],
      gates: [policy(rules), runGuard(), taintGate()],
      scanner: heuristicScanner(),
      envelope: quarantine(),
      redact: createRedactor(),
      exporters: [{ name: "null", export: () => ({ code: "success" }), shutdown: async () => {} }],
      store: memoryEventStore(),
      ...(vault ? { vault } : {}),
    }).run("Read the whole document for jane.doe@acme.io.");
  };
}

const variants = ["none", "reveal", "tokens"];
const runs = Object.fromEntries(variants.map((variant) => [variant, agentFor(variant)]));
for (const variant of variants) await runs[variant](20); // warm-up
const samples = Object.fromEntries(variants.map((variant) => [variant, []]));
for (let round = 0; round < repeats; round += 1) {
  for (const variant of variants) {
    globalThis.gc?.();
    const cpu = process.cpuUsage();
    const result = await runs[variant](n);
    const used = process.cpuUsage(cpu);
    if (result.status !== "completed")
      throw new Error(`${variant}: ${result.status} ${result.error ?? result.why}`);
    samples[variant].push((used.user + used.system) / n);
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const base = median(samples.reveal);
console.log(`every gate on, N=${n}, ${repeats} interleaved repeats, CPU µs per step (median)`);
console.log("| variant | µs/step | ÷ vault, tool reveals |");
console.log("|---|---|---|");
for (const variant of variants) {
  const label = {
    none: "no vault",
    reveal: "vault, tool declares reveal (before)",
    tokens: "vault, tool gets tokens",
  }[variant];
  console.log(
    `| ${label} | ${median(samples[variant]).toFixed(1)} | ${(median(samples[variant]) / base).toFixed(3)} |`,
  );
}
