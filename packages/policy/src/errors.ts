import { LoopguardError } from "@loopguard/core";

/** A policy document (JSON or object) does not match the schema; the message names the JSON path. */
export class PolicyValidationError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.PolicyValidationError";
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
  static override readonly marker: string = "loopguard.error.PolicyFrozenError";
  constructor(what: string) {
    super(
      "policy_frozen",
      `[policy] ${what}: this policy is frozen; build a new policy (and a new agent) to change the rules`,
    );
  }
}

/** A freeze store could not be read or written. */
export class FreezeStoreError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.FreezeStoreError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("freeze_store_error", message, options);
  }
}
