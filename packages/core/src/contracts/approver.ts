/**
 * The Approver contract: a person (or a service acting for one) who answers the `ask`
 * decisions of gates (step 3 of the pipeline).
 *
 * Failure rule: approvals fail closed. An approver that throws or rejects gives
 * `policy_indeterminate` (the call is refused, the cause is in the note and goes to `onError`,
 * and by default the run halts); one that does not answer within `approval.timeoutMs` is a
 * deny (`approval_timeout`) and its signal aborts; an answer that is not one of
 * `ApproverAnswer` is unreadable and refused as `policy_indeterminate`. Without an approver an
 * `ask` is a deny (`approval_no_approver`) unless approvals are durable (the run parks).
 */
import type { JsonValue } from "../json.js";

/** What an approver is asked. */
export interface ApprovalRequest {
  requestId: string;
  runId: string;
  agentId: string;
  tool: string;
  args: Record<string, unknown>;
  toolUseId: string;
  /** The rule that asked, and why (the first of `reasons`). */
  reason: string;
  message: string;
  /** Every rule that asked about this call, each with why: approving covers exactly these. */
  reasons: ReadonlyArray<{ reason: string; message: string; gate?: string }>;
  /**
   * The approval binds to these: a change to the arguments or the policy voids it.
   * `argsDigest` is the lowercase hex SHA-256 of the UTF-8 bytes of the arguments' RFC 8785
   * (JCS) canonical JSON, so the approver can recompute it from `args`.
   */
  argsDigest: string;
  policyDigest: string;
  expiresAt: number;
  details?: Record<string, JsonValue>;
}

/** What an approver may answer; anything else is unreadable and refused as `policy_indeterminate`. */
export type ApproverAnswer =
  | "approve"
  | "deny"
  | boolean
  | { decision: "approve" | "deny"; approver?: string; note?: string };

/** A person (or a service acting for one) who approves calls. */
export type Approver = (
  request: ApprovalRequest,
  options: { signal: AbortSignal },
) => ApproverAnswer | Promise<ApproverAnswer>;
