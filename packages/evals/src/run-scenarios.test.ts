import { describe, expect, it } from "vitest";
import { formatScorecard } from "./format-scorecard.js";
import { runScenarios } from "./run-scenarios.js";
import { scenarios } from "./scenarios/index.js";

describe("the scorecard", () => {
  it("passes every scenario whose packages have landed", async () => {
    const card = await runScenarios(scenarios);
    const text = formatScorecard(card);
    expect(card.failed, text).toBe(0);
    expect(card.passed).toBeGreaterThan(0);
    // Every package is in the workspace: nothing may hide as PENDING.
    expect(card.pending, text).toBe(0);
    for (const name of [
      "injection_exfiltration_blocked",
      "injection_refund_hijack_blocked",
      "envelope_breakout_neutralised",
      "no_pii_in_observability",
    ])
      expect(card.results.find((result) => result.name === name)?.status, name).toBe("PASS");
  });
});
