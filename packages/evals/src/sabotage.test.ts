import { describe, expect, it } from "vitest";
import { runScenarios } from "./run-scenarios.js";
import { scenarios } from "./scenarios/index.js";

describe("the scorecard can fail", () => {
  it.each([
    ["policy_ask", "human_approval_gate"],
    ["redaction", "no_pii_in_observability"],
    ["idempotency_keys", "crash_resume_exactly_once"],
    ["run_guard", "loop_warned_then_halted"],
  ] as const)("without %s, %s fails", async (sabotage, name) => {
    const card = await runScenarios(scenarios, { only: [name], sabotage: [sabotage] });
    expect(card.results[0]!.status).toBe("FAIL");
    expect(card.ok).toBe(false);
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
