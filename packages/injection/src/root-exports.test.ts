import { describe, expect, it } from "vitest";
import * as root from "./index.js";
import * as internal from "./internal/index.js";

// The root holds what users use (the scanners, the envelope, the taint gate and what
// configuring them names). An export added here is a decision: add it to this list in the
// same change, or put it behind `@loopguard/injection/internal`.
describe("@loopguard/injection's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "classifierSystemPrompt",
      "compositeScanner",
      "defaultRules",
      "defaultScanner",
      "flaggedSpanTag",
      "heuristicScanner",
      "learnedScanner",
      "llmClassifier",
      "maxSinkListLength",
      "maxSinkValueLength",
      "quarantine",
      "sinkKinds",
      "taintGate",
    ]);
  });

  it("keep training, parsing and taint-value internals behind ./internal", () => {
    expect(Object.keys(internal).length).toBe(33);
    for (const name of [
      "featureVector",
      "encodeDetectorWeights",
      "hostOf",
      "leavesOf",
      "amountKey",
    ])
      expect(Object.keys(internal)).toContain(name);
  });
});
