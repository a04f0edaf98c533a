import { describe, expect, it } from "vitest";
import * as root from "./index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change.
describe("@loopguard/ai-sdk's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "BudgetExceededError",
      "GuardToolsError",
      "GuardedToolError",
      "OutsideRunError",
      "guardTools",
      "isToolRefusal",
      "loopguardMiddleware",
    ]);
  });
});
