import { LoopguardError } from "@loopguard/core";

/** A tool set or option that `guardTools` cannot guard (no schema, no `execute`, a provider tool). */
export class GuardToolsError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.GuardToolsError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("guard_tools_invalid", message, options);
  }
}

/** A guarded tool failed while it ran (timeout, a thrown error); the AI SDK hands it to the model as a tool error. */
export class GuardedToolError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.GuardedToolError";
  /** The failure kind loopguard recorded (`timeout`, `tool_error`, `aborted`, ...). */
  readonly kind: string;
  constructor(message: string, kind: string) {
    super("guarded_tool_failed", message);
    this.kind = kind;
  }
}

/** The run's budget cannot afford another model call. */
export class BudgetExceededError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.BudgetExceededError";
  /** Which cap was reached: `maxSteps`, `maxTokens` or `maxUsd`. */
  readonly limit: string;
  constructor(message: string, limit: string) {
    super("budget_exceeded", message);
    this.limit = limit;
  }
}

/**
 * `loopguardMiddleware` was called outside any `withRun`: it has no run to charge, no budget to
 * keep and nowhere to record what it scanned, so it refuses the model call instead of letting
 * it through unguarded.
 */
export class OutsideRunError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.OutsideRunError";
  constructor(message: string) {
    super("outside_run", message);
  }
}
