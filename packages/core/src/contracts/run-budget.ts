/**
 * The RunBudget contract: a budget that spans runs (a tenant's day, a team's month), consulted
 * by the loop at run start and before each model step, next to the run's own `budget`.
 *
 * Failure rule: run budgets fail closed. A budget that cannot answer (its store unreachable,
 * timed out) rejects; the loop then takes no model step and pauses the run (status `running`,
 * why `run_budget_unavailable`, the reason in `error`): nothing is spent that was not checked,
 * and the run is not lost (`resume` continues it once the store answers). A budget that
 * refuses ends the run as `stopped` (why `run_budget`, the budget's message in `error`), before
 * the step that would have crossed it: predictive, never crossed.
 *
 * Reservations are keyed by run and step (`reserve` and `settle` get both), so a step retried
 * after a crash or a takeover reserves the same thing once, and the worker that finishes the
 * step settles it: nothing leaks and nothing counts twice.
 */
import type { JsonValue } from "../json.js";

/** The run a budget is asked about. */
export interface RunBudgetRun {
  runId: string;
  agentId: string;
  /** The run's context as its `run-start` recorded it (roles and attributes, e.g. `tenant`). */
  context: Readonly<Record<string, JsonValue>>;
  /** When the run started (epoch ms): budgets that count per day count the run on this day. */
  startedAt: number;
}

/** What a budget answered. */
export type RunBudgetVerdict =
  | { ok: true }
  | {
      ok: false;
      /** A stable reason code, e.g. `tenant_budget`. */
      reason: string;
      /** What was crossed, for the run's result and the operator; names the budget. */
      message: string;
      /**
       * USD the step could still have (for a refused step): the loop shrinks `max_tokens` to
       * fit and asks once more when a smaller step would fit.
       */
      availableUsd?: number;
    };

/** A budget over many runs. */
export interface RunBudget {
  /** A name for diagnostics, e.g. `tenantBudget`. */
  readonly name: string;
  /** Asked once when a run starts (before its first model step). Optional. */
  start?(run: RunBudgetRun, options: { now: number }): Promise<RunBudgetVerdict>;
  /** Reserves the step's worst-case cost (`usd`). The same run and step twice is one reservation. */
  reserve(
    run: RunBudgetRun,
    step: { step: number; usd: number; now: number },
  ): Promise<RunBudgetVerdict>;
  /**
   * Optional: `start` and the first step's `reserve` in one call (one round trip on a store with
   * `batch`), all or nothing. The loop uses it for a new run's first step when the budget has
   * `start`; on a refusal it asks `start` and `reserve` one at a time (so a smaller step may
   * still fit, and the refusal says which limit was reached).
   */
  startAndReserve?(
    run: RunBudgetRun,
    step: { step: number; usd: number; now: number },
  ): Promise<RunBudgetVerdict>;
  /** Settles the step at what it really cost (`usd`, 0 releases it); settling twice does nothing. */
  settle(run: RunBudgetRun, step: { step: number; usd: number; now: number }): Promise<void>;
}
