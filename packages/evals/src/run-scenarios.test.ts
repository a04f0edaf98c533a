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
  });
});
