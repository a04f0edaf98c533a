import { describe, expect, it } from "vitest";
import { loadPackages } from "./defences.js";
import { runScenarios } from "./run-scenarios.js";
import { scenarios } from "./scenarios/index.js";

const injection = (await loadPackages()).modules.injection;

describe("the scorecard can fail", () => {
  it.each([
    ["policy_ask", "human_approval_gate"],
    ["redaction", "no_pii_in_observability"],
    ["idempotency_keys", "crash_resume_exactly_once"],
    ["run_guard", "loop_warned_then_halted"],
    ["vault", "no_pii_in_observability"],
  ] as const)("without %s, %s fails", async (sabotage, name) => {
    const card = await runScenarios(scenarios, { only: [name], sabotage: [sabotage] });
    expect(card.results[0]!.status).toBe("FAIL");
    expect(card.ok).toBe(false);
  });

  it("without the PII vault, the stored event log holds customer PII and the global check fails", async () => {
    const card = await runScenarios(scenarios, {
      only: ["refund_happy_path"],
      sabotage: ["vault"],
    });
    const check = card.results[0]!.checks.find((item) => item.name === "no_pii_in_observability");
    expect(check?.ok).toBe(false);
    expect(check?.detail).toContain("in event log of");
  });

  it.skipIf(!injection)(
    "without the taint gate, injection_refund_hijack_blocked fails (the policy alone pays the hijack)",
    async () => {
      const card = await runScenarios(scenarios, {
        only: ["injection_refund_hijack_blocked"],
        sabotage: ["taint_gate"],
      });
      const result = card.results[0]!;
      expect(result.status).toBe("FAIL");
      expect(result.checks.find((item) => item.name === "hijacked_refund_not_paid")?.ok).toBe(
        false,
      );
    },
  );

  // Without loopguard's link (the child as a second, unrelated run, as peers' agents-as-tools
  // are), each delegation property's own check fails.
  it.each([
    ["delegation_linked_runs_resume", ["parent_log_names_the_child", "every_side_effect_once"]],
    [
      "delegation_parent_policy_binds",
      ["no_email_left_the_company", "depth_over_limit_refused_at_construction"],
    ],
    ["delegation_one_budget", ["tree_spend_within_parent_cap", "share_caps_the_child_at_half"]],
    ["delegation_halt_latch", ["parent_halted_by_the_child", "frozen_parent_stops_the_child"]],
    ["delegation_taint_crosses", ["email_to_an_address_the_child_read_refused"]],
    ["delegation_stream_tags", ["child_events_tagged_depth_1", "grandchild_events_tagged_depth_2"]],
    ["delegation_approval_parks_both", ["parent_parked", "child_parked"]],
    ["delegation_one_trace", ["same_trace_id", "child_under_the_execute_tool_span"]],
  ] as const)("without delegation, %s fails on its own checks", async (name, failing) => {
    const card = await runScenarios(scenarios, { only: [name], sabotage: ["delegation"] });
    const result = card.results[0]!;
    expect(result.status).toBe("FAIL");
    for (const check of failing)
      expect(result.checks.find((item) => item.name === check)?.ok, check).toBe(false);
  });

  // With the link in place, removing the one defence a property rests on fails it too.
  it.each([
    ["idempotency_keys", "delegation_linked_runs_resume", "every_side_effect_once"],
    ["policy_deny", "delegation_parent_policy_binds", "refused_by_the_parents_policy"],
    ["run_guard", "delegation_halt_latch", "parent_halted_by_the_child"],
    ["taint_gate", "delegation_taint_crosses", "email_to_an_address_the_child_read_refused"],
    ["policy_ask", "delegation_approval_parks_both", "parent_parked"],
  ] as const)("without %s, %s fails %s", async (sabotage, name, check) => {
    const card = await runScenarios(scenarios, { only: [name], sabotage: [sabotage] });
    const result = card.results[0]!;
    expect(result.status).toBe("FAIL");
    expect(result.checks.find((item) => item.name === check)?.ok).toBe(false);
  });

  it("rejects an unknown scenario name", async () => {
    await expect(runScenarios(scenarios, { only: ["nope"] })).rejects.toThrow(
      /no scenario is named "nope"/,
    );
  });
});

describe("wilsonInterval", () => {
  it("brackets the observed rate", async () => {
    const { wilsonInterval } = await import("./live-scorecard.js");
    const { low, high } = wilsonInterval(8, 10);
    expect(low).toBeLessThan(0.8);
    expect(high).toBeGreaterThan(0.8);
    expect(wilsonInterval(0, 5).low).toBe(0);
  });
});
