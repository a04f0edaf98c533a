import { LoopguardError } from "@loopguard/core";

/** A policy document (JSON or object) does not match the schema; the message names the JSON path. */
export class PolicyValidationError extends LoopguardError {
  /** Every problem found, each as `path: what was expected`. */
  readonly issues: readonly string[];
  constructor(issues: readonly string[], options?: { cause?: unknown }) {
    super(
      "policy_invalid",
      `[policy] ${issues[0] ?? "invalid policy"}${issues.length > 1 ? ` (and ${issues.length - 1} more: ${issues.slice(1, 4).join("; ")}${issues.length > 4 ? "; ..." : ""})` : ""}; fix the policy document and load it again`,
      options,
    );
    this.issues = issues;
  }
}

/** A frozen policy was asked to change. */
export class PolicyFrozenError extends LoopguardError {
  constructor(what: string) {
    super(
      "policy_frozen",
      `[policy] ${what}: this policy is frozen; build a new policy (and a new agent) to change the rules`,
    );
  }
}

/** A freeze store could not be read or written. */
export class FreezeStoreError extends LoopguardError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("freeze_store_error", message, options);
  }
}
