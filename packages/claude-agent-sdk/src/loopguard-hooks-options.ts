import type { CanUseTool, HookCallbackMatcher } from "@anthropic-ai/claude-agent-sdk";
import type {
  Approver,
  Gate,
  OutputEnvelope,
  RunContextInput,
  RunHandle,
  Scanner,
} from "@loopguard/core";

/** Options of `loopguardHooks`. */
export interface LoopguardHooksOptions {
  /** The gates every tool call passes (policy, RunGuard, taint, ...). */
  gates?: readonly Gate[];
  /** Scans each tool's output (PostToolUse) and records it on the run, so the taint gate sees it. */
  scanner?: Scanner;
  /** Replaces each tool's output with the enveloped text the model then sees (`updatedToolOutput`). */
  envelope?: OutputEnvelope;
  /**
   * Answers a gate's `ask`. Without one, the PreToolUse hook answers `permissionDecision: "ask"`,
   * handing the call to the SDK's own permission flow (your `canUseTool` or the user), and
   * `canUseTool` refuses the call.
   */
  approver?: Approver;
  /** How long the approver may take. Default 5 minutes. */
  approvalTimeoutMs?: number;
  /** Refusal reasons that halt the run (default: the kill switch, `policy_indeterminate`). */
  haltOn?: readonly string[];
  /** Tool names (exact, e.g. `Bash`, `mcp__payments__refund`) the taint gate guards. */
  sensitiveTools?: readonly string[];
  /** How long an admitted call may take the SDK to finish before it is logged as timed out. Default 10 minutes. */
  timeoutMs?: number;
  /**
   * Your own permission callback, for asks handed to the SDK's permission flow (no `approver`):
   * the returned `canUseTool` asks it and records its answer as the approval. Without one,
   * such an ask is refused (`approval_no_approver`) when the SDK asks `canUseTool`.
   */
  canUseTool?: CanUseTool;
  /** The run opened when `loopguardHooks` is not called inside `withRun`. Default `{ agentId: "claude-agent-sdk" }`. */
  run?: RunContextInput;
  onError?: (error: unknown, where: string) => void;
}

/** What `loopguardHooks` returns: spread `hooks` and `canUseTool` into `query({ options })`. */
export interface LoopguardHooks {
  /**
   * `PreToolUse` runs the gate pipeline; `PostToolUse` hands the output back to it (scan, log);
   * `PostToolUseFailure` and `PermissionDenied` end a call that did not run to its output.
   */
  hooks: {
    PreToolUse: HookCallbackMatcher[];
    PostToolUse: HookCallbackMatcher[];
    PostToolUseFailure: HookCallbackMatcher[];
    PermissionDenied: HookCallbackMatcher[];
  };
  /** The same pipeline as a permission callback, for calls the SDK would ask about. */
  canUseTool: CanUseTool;
  /** The run the calls belong to. */
  run: RunHandle;
  /** Ends the calls still waiting on the SDK (an interrupted query): they are logged as failed. */
  close(): void;
}
