import type { RefusedCall } from "./contracts/run-view.js";
import type { Vault } from "./contracts/vault.js";
import type { DecisionRecord, RunStatus } from "./events.js";
import type { RunFold } from "./fold.js";

/** A call the pipeline refused. */
export interface BlockedCall {
  tool: string;
  toolUseId: string;
  reason: string;
  message: string;
  decision: DecisionRecord;
}

/** A tool call that may have acted though its result never reached the log. */
export interface UncertainCall {
  tool: string;
  toolUseId: string;
  idempotencyKey: string;
}

/** What a run ended with (or parked with). */
export interface RunResult {
  runId: string;
  status: RunStatus;
  /** The final answer, or the partial answer of a stopped run. */
  answer: string;
  /**
   * Why it ended: `end_turn`, `max_tokens`, `refusal`, `budget`, `wall_clock`, `cancelled`,
   * `halted`, `error`; `not_started` when the store could not record its `run-start` (nothing
   * ran, nothing to resume).
   */
  why: string;
  /** The budget limit that stopped it. */
  limit?: "maxSteps" | "maxTokens" | "maxUsd" | "wallClockMs";
  steps: number;
  tokens: { input: number; output: number };
  costUsd: number;
  blocked: BlockedCall[];
  haltReason?: string;
  error?: string;
  /**
   * Set when the event store failed after these calls were admitted (their intent is in the
   * log, their result is not): each may have acted. `resume(runId)` runs them again with the
   * same `idempotencyKey`, so a tool that hands the key to its side effect acts once.
   */
  uncertainCalls?: UncertainCall[];
  /** How long the run waited for a slot (`maxConcurrentRuns`) before it started or resumed, in ms. */
  queueWaitMs?: number;
  /** Set when the run waits on a person. */
  pendingApprovals?: Array<{
    requestId: string;
    tool: string;
    toolUseId: string;
    reason: string;
    message: string;
    expiresAt: number;
  }>;
}

/**
 * The result of a run as its fold stands: ended, parked on approvals, paused or failed.
 * `vault` reveals tokens in the answer (the host is trusted; the log keeps tokens).
 */
export function resultOf(
  fold: RunFold,
  vault: Vault | undefined,
  extra: { error?: string } = {},
): RunResult {
  const state = fold.state;
  const end = fold.end;
  const turn = fold.pendingTurn;
  const pending =
    fold.status === "awaiting_approval" && turn
      ? [...turn.approvals.values()]
          .filter((entry) => !entry.decision && !turn.results.has(entry.request.toolUseId))
          .map(({ request }) => ({
            requestId: request.requestId,
            tool: request.tool,
            toolUseId: request.toolUseId,
            reason: request.reason,
            message: request.message,
            expiresAt: request.expiresAt,
          }))
      : undefined;
  return {
    runId: fold.start.runId,
    status: extra.error && !end ? "failed" : fold.status,
    // The host is trusted: it gets the answer with the vault's tokens revealed; the log keeps tokens.
    answer: vault
      ? vault.reveal(end?.answer ?? fold.lastAssistantText)
      : (end?.answer ?? fold.lastAssistantText),
    why:
      end?.why ??
      (fold.status === "awaiting_approval"
        ? "awaiting_approval"
        : extra.error
          ? "error"
          : "running"),
    ...(end?.limit ? { limit: end.limit } : {}),
    steps: fold.steps,
    tokens: { input: state.spend.inputTokens, output: state.spend.outputTokens },
    costUsd: fold.committedUsd,
    // The run's own refusals (its state also holds its descendants', for its gates).
    blocked: ownRefusals(state.refusals).map((refusal) => ({
      tool: refusal.tool,
      toolUseId: refusal.toolUseId,
      reason: refusal.reason,
      message: refusal.decision.message ?? "",
      decision: refusal.decision,
    })),
    ...(state.haltReason ? { haltReason: state.haltReason } : {}),
    ...(end?.error ? { error: end.error } : extra.error ? { error: extra.error } : {}),
    ...(pending && pending.length > 0 ? { pendingApprovals: pending } : {}),
  };
}

/**
 * The result of a run whose `run-start` could not be recorded (the store failed): it never
 * started, executed nothing, and left no log to resume.
 */
export function failedStartResult(runId: string, error: unknown): RunResult {
  const message = error instanceof Error ? error.message : String(error);
  return {
    runId,
    status: "failed",
    answer: "",
    why: "not_started",
    steps: 0,
    tokens: { input: 0, output: 0 },
    costUsd: 0,
    blocked: [],
    error: `[core] run ${runId} could not start: the event store did not record its run-start (${message}); it was not started, nothing was executed and there is nothing to resume: start it again once the store works`,
  };
}

/**
 * The result of a run whose event store failed mid-run (`broken`: the write that failed). Says
 * truthfully what may have happened: when calls were admitted and their results never reached
 * the log, their effects may have happened and `resume` will run them again with the same
 * idempotency keys; otherwise the run stopped before acting.
 */
export function storeFailedResult(
  fold: RunFold,
  vault: Vault | undefined,
  broken: unknown,
): RunResult {
  const cause = (broken as Error)?.message ?? String(broken);
  const runId = fold.start.runId;
  const uncertain: UncertainCall[] = [...(fold.pendingTurn?.intents.values() ?? [])].map(
    (intent) => ({
      tool: intent.tool,
      toolUseId: intent.toolUseId,
      idempotencyKey: intent.idempotencyKey,
    }),
  );
  if (uncertain.length === 0)
    return resultOf(fold, vault, {
      error: `[core] the event store failed, so the run stopped before acting: ${cause}`,
    });
  const calls = uncertain
    .map((call) => `${call.tool} (${call.toolUseId}, idempotency key ${call.idempotencyKey})`)
    .join(", ");
  return {
    ...resultOf(fold, vault, {
      error: `[core] the event store failed after ${calls} was admitted, so its result is not in the log: its effect may have happened. resume("${runId}") runs it again with the same idempotency key once the store works; a tool that passes ctx.idempotencyKey to its side effect acts once. Store error: ${cause}`,
    }),
    uncertainCalls: uncertain,
  };
}

/** The result of a run that ended before it started (cancelled while it waited to be admitted). */
export function notStartedResult(runId: string, why: string, error: string): RunResult {
  return {
    runId,
    status: "stopped",
    answer: "",
    why,
    steps: 0,
    tokens: { input: 0, output: 0 },
    costUsd: 0,
    blocked: [],
    error,
  };
}

/** The refusals a run made itself (its descendants' carry their `runId`). */
function ownRefusals(refusals: readonly RefusedCall[]): readonly RefusedCall[] {
  return refusals.some((refusal) => refusal.runId !== undefined)
    ? refusals.filter((refusal) => refusal.runId === undefined)
    : refusals;
}
