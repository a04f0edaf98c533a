/**
 * The subsets of the labelled corpus (`shared/data/injection.jsonl`, described in
 * `shared/data/README.md`) that rules and the learned detector may be tuned on. Every other
 * subset is measured only. One list for the training script, the detection bench and the tests,
 * so they cannot drift apart. Internal: not exported from the package's entry point.
 */
export const devSubsets: ReadonlySet<string> = new Set([
  "agentdojo_injected_tool_output",
  "agentdojo_clean_tool_output",
  "garak_latent_injection",
  "garak_clean_context",
  "llm_guard_unit_tests",
  "notinject_hard_negative",
  "pint_example",
]);
