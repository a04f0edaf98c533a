import { describe, expect, it } from "vitest";
import * as root from "./index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change, or put it behind a subpath.
describe("@loopguard/core's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "AmbiguousApprovalError",
      "AppendConflictError",
      "ContextWindowError",
      "CorruptLogError",
      "ExportDroppedError",
      "InvalidArgumentError",
      "LoopguardError",
      "ModelCallError",
      "NoPendingApprovalError",
      "RunBudgetUnavailableError",
      "RunLogDroppedError",
      "RunNotFoundError",
      "StreamIdleError",
      "StreamProtocolError",
      "ToolError",
      "UnknownModelPriceError",
      "VolatileStoreError",
      "approveRun",
      "childRunId",
      "claudePrices",
      "costOf",
      "createAgent",
      "currentRun",
      "defaultMaxOutputChars",
      "guardTool",
      "inlineChildRunner",
      "memoryEventStore",
      "priceOf",
      "priceTableDate",
      "shutdownExporters",
      "stopRun",
      "tool",
      "withRun",
    ]);
  });
});
