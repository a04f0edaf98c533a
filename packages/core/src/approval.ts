import type { JsonValue } from "./json.js";

/** What an approver is asked. */
export interface ApprovalRequest {
  requestId: string;
  runId: string;
  agentId: string;
  tool: string;
  args: Record<string, unknown>;
  toolUseId: string;
  /** The rule that asked, and why. */
  reason: string;
  message: string;
  /** The approval binds to these: a change to the arguments or the policy voids it. */
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

/** A normalised approval answer. */
export type ApprovalOutcome =
  | { type: "approve"; approver?: string; note?: string }
  | {
      type: "deny";
      why: "denied" | "timeout" | "no_approver" | "expired" | "stale";
      approver?: string;
      note?: string;
    }
  | { type: "indeterminate"; note: string }
  | { type: "park" };

/** Reads an approver's answer strictly: only a clear consent or refusal counts. */
export function readApproverAnswer(answer: unknown): ApprovalOutcome {
  if (answer === "approve" || answer === true) return { type: "approve" };
  if (answer === "deny" || answer === false) return { type: "deny", why: "denied" };
  if (answer !== null && typeof answer === "object" && !Array.isArray(answer)) {
    const record = answer as Record<string, unknown>;
    const approver = typeof record.approver === "string" ? { approver: record.approver } : {};
    const note = typeof record.note === "string" ? { note: record.note } : {};
    if (record.decision === "approve") return { type: "approve", ...approver, ...note };
    if (record.decision === "deny") return { type: "deny", why: "denied", ...approver, ...note };
  }
  let shown: string;
  try {
    shown = JSON.stringify(answer) ?? String(answer);
  } catch {
    shown = String(answer);
  }
  return { type: "indeterminate", note: `unreadable approver answer: ${shown.slice(0, 200)}` };
}
