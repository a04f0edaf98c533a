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

/** What a run ended with (or parked with). */
export interface RunResult {
  runId: string;
  status: RunStatus;
  /** The final answer, or the partial answer of a stopped run. */
  answer: string;
  /** Why it ended: `end_turn`, `max_tokens`, `refusal`, `budget`, `wall_clock`, `cancelled`, `halted`, `error`. */
  why: string;
  /** The budget limit that stopped it. */
  limit?: "maxSteps" | "maxTokens" | "maxUsd" | "wallClockMs";
  steps: number;
  tokens: { input: number; output: number };
  costUsd: number;
  blocked: BlockedCall[];
  haltReason?: string;
  error?: string;
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
    blocked: state.refusals.map((refusal) => ({
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
    why: "error",
    steps: 0,
    tokens: { input: 0, output: 0 },
    costUsd: 0,
    blocked: [],
    error: `[core] run ${runId} could not start: the event store did not record its run-start (${message}); nothing was executed, start it again once the store works`,
  };
}
