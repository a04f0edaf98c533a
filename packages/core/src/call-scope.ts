import type { DenyDecision } from "./contracts/gate.js";
import type { ParentCall } from "./delegation.js";
import type { ApprovalDecisionEvent, ApprovalRequestEvent, RunEvent } from "./events.js";
import type { JsonValue } from "./json.js";
import type { Tool } from "./tool.js";

/** Where one call happens: its run, its step and where its events go. */
export interface CallScope {
  runId: string;
  agentId: string;
  step: number;
  /** Records events (the loop: durably in the log, folded into the run; the guard: the run state). */
  write(...events: RunEvent[]): Promise<void>;
  /** An approval of this call already in the log (a resumed or answered run). */
  recordedApproval?(
    toolUseId: string,
  ): { request: ApprovalRequestEvent; decision?: ApprovalDecisionEvent } | undefined;
  /** Step 5: refuses a call the run cannot afford. */
  // biome-ignore lint/suspicious/noExplicitAny: any tool of the run, whatever its argument and result types
  budget?(tool: Tool<any, any> | undefined): DenyDecision | undefined;
  /**
   * Right before a tool runs: confirms the run is still this process's to advance (a worker
   * re-checks its claim). Rejecting (or throwing) stops the call before any side effect;
   * `undefined` means there is nothing to wait for.
   */
  beforeEffect?(): Promise<void> | undefined;
  /**
   * For a delegating tool (`agent.asTool`): the parent's side of the call. Absent outside an
   * agent's loop (`guardTool`), where such a tool answers with an error.
   */
  parentCall?(callId: string, args: Record<string, JsonValue>, signal: AbortSignal): ParentCall;
}
