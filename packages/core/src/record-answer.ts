import { AmbiguousApprovalError, NoPendingApprovalError } from "./errors.js";
import type { RunWriter } from "./run-writer.js";

/** An answer to a parked approval. */
export interface ApprovalAnswer {
  decision: "approve" | "deny" | "indeterminate";
  approver?: string;
  note?: string;
  /** Which request; default: the only open one. */
  requestId?: string;
}

/** Records a person's answer to the parked approval it names (or the only open one). */
export async function recordAnswer(
  writer: RunWriter,
  answer: ApprovalAnswer,
  now: () => number,
): Promise<void> {
  const fold = writer.fold;
  const runId = writer.runId;
  const turn = fold.pendingTurn;
  const waiting = turn
    ? [...turn.approvals.values()].filter(
        (entry) => !entry.decision && !turn.results.has(entry.request.toolUseId),
      )
    : [];
  if (fold.end || waiting.length === 0) {
    throw new NoPendingApprovalError(runId, fold.status);
  }
  const target = answer.requestId
    ? waiting.find((entry) => entry.request.requestId === answer.requestId)
    : waiting.length === 1
      ? waiting[0]
      : undefined;
  if (!target) {
    throw new AmbiguousApprovalError(
      runId,
      waiting.map((entry) => entry.request.requestId),
      answer.requestId,
    );
  }
  const expired = now() > target.request.expiresAt;
  await writer.write({
    type: "approval-decision",
    requestId: target.request.requestId,
    toolUseId: target.request.toolUseId,
    decision: expired ? "expired" : answer.decision,
    ...(answer.approver ? { approver: answer.approver } : {}),
    ...(answer.note ? { note: answer.note } : {}),
  });
}
