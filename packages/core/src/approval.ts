import type { ApprovalRequest, Approver, ApproverAnswer } from "./contracts/approver.js";

// The contract moved to contracts/approver.ts; these names stay importable from here.
export type { ApprovalRequest, Approver, ApproverAnswer };

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
