import type { ApprovalOutcome, Approver } from "./approval.js";
import { readApproverAnswer } from "./approval.js";
import type { CallScope } from "./call-scope.js";
import type { AskDecision, ToolCall } from "./contracts/gate.js";
import type { ApprovalDecisionEvent, ApprovalRequestEvent } from "./events.js";
import { randomHex } from "./random-hex.js";
import { shortMessage } from "./short-message.js";

/** How `ask` decisions are answered. */
export interface ApprovalSettings {
  /** Answers inline; without one an `ask` is a deny (`approval_no_approver`) unless durable. */
  approver: Approver | undefined;
  /** How long an inline approver may take. */
  timeoutMs: number;
  /** How long a request stays valid (its `expiresAt`). */
  ttlMs: number;
  /** Park the run as `awaiting_approval` instead of asking inline. */
  durable: boolean;
}

/** What the approval step needs besides the call. */
export interface ApprovalContext {
  settings: ApprovalSettings;
  policyDigest: string;
  now: () => number;
  reportError: (error: unknown, where: string) => void;
  /** The vault's tokeniser: the request's messages are recorded with tokens, not real values. */
  tokenize?: (text: string) => string;
}

/** Every reason of an ask (one, or all of a combined ask). */
function reasonsOf(ask: AskDecision): Array<{ reason: string; message: string; gate?: string }> {
  return ask.reasons && ask.reasons.length > 0
    ? ask.reasons.map((item) => ({ ...item }))
    : [{ reason: ask.reason, message: ask.message }];
}

const timedOut = Symbol("timed out");

/**
 * Step 3 of the pipeline: the outcome of an `ask`. A decision already in the log is reused (an
 * approval whose arguments or policy changed since is `stale`); otherwise the request is
 * written, then the run parks (durable approvals) or the approver is asked inline with a
 * timeout, and its answer is written. An approver that throws gives `indeterminate` with its
 * cause; the run's cancellation propagates.
 */
export async function approvalFor(
  context: ApprovalContext,
  scope: CallScope,
  call: ToolCall,
  ask: AskDecision,
  argsDigest: string,
  signal: AbortSignal,
): Promise<ApprovalOutcome> {
  const recorded = scope.recordedApproval?.(call.toolUseId);
  const reasons = reasonsOf(ask);
  if (recorded?.decision)
    return recordedOutcome(
      recorded.request,
      recorded.decision,
      argsDigest,
      context.policyDigest,
      reasons,
    );
  // What the log, the model and the host see of the ask is tokenised like everything else.
  const tokenize = context.tokenize ?? ((text: string) => text);
  const request: ApprovalRequestEvent = recorded?.request ?? {
    type: "approval-request",
    step: scope.step,
    requestId: `apr_${randomHex(8)}`,
    toolUseId: call.toolUseId,
    tool: call.tool,
    argsDigest,
    policyDigest: context.policyDigest,
    reason: ask.reason,
    message: tokenize(ask.message),
    reasons: reasons.map((item) => ({ ...item, message: tokenize(item.message) })),
    expiresAt: context.now() + context.settings.ttlMs,
  };
  if (!recorded) await scope.write(request);
  if (context.settings.durable) return { type: "park" };
  const outcome = await askApprover(context, scope, call, ask, request, argsDigest, signal);
  await scope.write({
    type: "approval-decision",
    requestId: request.requestId,
    toolUseId: call.toolUseId,
    decision: decisionOf(outcome),
    ...("approver" in outcome && outcome.approver ? { approver: outcome.approver } : {}),
    ...("note" in outcome && outcome.note ? { note: outcome.note } : {}),
  });
  return outcome;
}

function decisionOf(outcome: ApprovalOutcome): ApprovalDecisionEvent["decision"] {
  if (outcome.type === "approve") return "approve";
  if (outcome.type !== "deny") return "indeterminate";
  return outcome.why === "denied" || outcome.why === "stale" ? "deny" : outcome.why;
}

/** The outcome of a decision read back from the log. */
function recordedOutcome(
  request: ApprovalRequestEvent,
  decision: ApprovalDecisionEvent,
  argsDigest: string,
  policyDigest: string,
  asked: ReadonlyArray<{ reason: string }>,
): ApprovalOutcome {
  const answered = {
    ...(decision.approver ? { approver: decision.approver } : {}),
    ...(decision.note ? { note: decision.note } : {}),
  };
  switch (decision.decision) {
    case "approve": {
      if (request.argsDigest !== argsDigest || request.policyDigest !== policyDigest)
        return { type: "deny", why: "stale", ...answered };
      // An approval covers exactly the asks the person saw: a reason that is new since (the
      // call became tainted meanwhile) was never approved.
      const seen = new Set(
        (request.reasons ?? [{ reason: request.reason }]).map((item) => item.reason),
      );
      if (asked.some((item) => !seen.has(item.reason)))
        return { type: "deny", why: "stale", ...answered };
      return { type: "approve", ...answered };
    }
    case "deny":
      return { type: "deny", why: "denied", ...answered };
    case "timeout":
      return { type: "deny", why: "timeout" };
    case "expired":
    // A withdrawn request belongs to a run that ended: like an expired one, it admits nothing.
    case "withdrawn":
      return { type: "deny", why: "expired" };
    case "no_approver":
      return { type: "deny", why: "no_approver" };
    default:
      return {
        type: "indeterminate",
        note: decision.note ?? "the recorded answer could not be read",
      };
  }
}

/** Asks the approver inline, bounded by the timeout and the run's signal. */
async function askApprover(
  context: ApprovalContext,
  scope: CallScope,
  call: ToolCall,
  ask: AskDecision,
  request: ApprovalRequestEvent,
  argsDigest: string,
  signal: AbortSignal,
): Promise<ApprovalOutcome> {
  const approver = context.settings.approver;
  if (!approver) return { type: "deny", why: "no_approver" };
  const timeout = new AbortController();
  const onAbort = () => timeout.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const answer = await Promise.race([
      Promise.resolve().then(() =>
        approver(
          {
            requestId: request.requestId,
            runId: scope.runId,
            agentId: scope.agentId,
            tool: call.tool,
            args: call.args,
            toolUseId: call.toolUseId,
            reason: ask.reason,
            message: ask.message,
            reasons: reasonsOf(ask),
            argsDigest,
            policyDigest: context.policyDigest,
            expiresAt: request.expiresAt,
            ...(ask.details ? { details: ask.details } : {}),
          },
          { signal: timeout.signal },
        ),
      ),
      new Promise<symbol>((resolve) => {
        timer = setTimeout(() => resolve(timedOut), context.settings.timeoutMs);
      }),
    ]);
    if (signal.aborted) throw signal.reason;
    if (answer === timedOut) {
      timeout.abort(new Error("approval timed out"));
      return { type: "deny", why: "timeout" };
    }
    return readApproverAnswer(answer);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    context.reportError(error, "approver");
    return { type: "indeterminate", note: `the approver failed: ${shortMessage(error)}` };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}
