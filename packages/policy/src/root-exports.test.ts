import { describe, expect, it } from "vitest";
import * as root from "./index.js";
import * as internal from "./internal/index.js";
import * as node from "./node/index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change, or put it behind `@loopguard/policy/internal`.
describe("@loopguard/policy's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "FreezeStoreError",
      "PolicyFrozenError",
      "PolicyValidationError",
      "all",
      "allow",
      "any",
      "argDomainNotIn",
      "argGt",
      "argIn",
      "argLt",
      "argMatches",
      "argNotIn",
      "argPath",
      "ask",
      "deny",
      "killSwitch",
      "loadPolicy",
      "noProgressDefaults",
      "not",
      "policy",
      "policyDocumentSchema",
      "rateLimit",
      "replayRuns",
      "runGuard",
      "shadow",
      "tenantBudget",
    ]);
  });

  it("keep what reads files behind ./node", () => {
    expect(Object.keys(node).sort()).toEqual([
      "fileFreezeStore",
      "freezeFileSchema",
      "loadPolicyFile",
    ]);
  });

  it("keep internals behind ./internal", () => {
    expect(Object.keys(internal).sort()).toEqual([
      "compileGlob",
      "isPredicate",
      "normalizeValue",
      "parseFreezeFile",
    ]);
  });
});
