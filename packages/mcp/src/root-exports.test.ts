import { describe, expect, it } from "vitest";
import * as root from "./index.js";
import * as internal from "./internal/index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change, or put it behind `@loopguard/mcp/internal`.
describe("@loopguard/mcp's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual(["McpGuardError", "guardMcpTools", "runMcpProxy"]);
  });

  it("keep the building blocks behind ./internal", () => {
    expect(Object.keys(internal).sort()).toEqual([
      "compileInputSchema",
      "compileOutputSchema",
      "listAllTools",
      "mcpBackedTool",
      "nameSkeleton",
      "textOf",
      "vetNames",
    ]);
  });
});
