/**
 * The loop's side of run budgets (`createAgent({ budgets })`): asks them at run start, reserves
 * each model step's worst case before the call (shrinking `max_tokens` to what is left when
 * that fits), settles the step at its real cost after the response, and settles a step a
 * crashed or paused process left open when the run is resumed.
 */
import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { RunBudget, RunBudgetRun, RunBudgetVerdict } from "./contracts/run-budget.js";
import { InvalidArgumentError, LoopguardError } from "./errors.js";
import type { RunFold } from "./fold.js";
import type { JsonValue } from "./json.js";
import { type ModelPrice, worstCaseCost } from "./pricing.js";
import type { RunWriter } from "./run-writer.js";
import { StopRun } from "./stop-run.js";

/**
 * A run budget could not be checked (its store failed): the run takes no step and pauses,
 * with this error's message as the reason. Code `run_budget_unavailable`.
 */
export class RunBudgetUnavailableError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.RunBudgetUnavailableError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("run_budget_unavailable", message, options);
  }
}

/** A run budget refused: the run ends `stopped` with why `run_budget` and this message. */
export class RunBudgetStop extends StopRun {
  constructor(
    readonly reason: string,
    readonly detail: string,
  ) {
    super("run_budget");
  }
}

/** Checks `createAgent`'s `budgets` option. */
export function validateRunBudgets(value: unknown): readonly RunBudget[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new InvalidArgumentError(
      "[core] createAgent: budgets must be an array of run budgets, e.g. [tenantBudget({ store, perDay: { maxUsd: 50 } })]",
    );
  for (const [index, budget] of value.entries()) {
    if (
      !budget ||
      typeof budget !== "object" ||
      typeof budget.name !== "string" ||
      typeof budget.reserve !== "function" ||
      typeof budget.settle !== "function" ||
      (budget.start !== undefined && typeof budget.start !== "function")
    )
      throw new InvalidArgumentError(
        `[core] createAgent: budgets[${index}] is not a run budget: it needs name, reserve(run, step) and settle(run, step)`,
      );
  }
  return value as RunBudget[];
}

/** The hooks the loop calls; `undefined` when the agent has no run budgets. */
export interface RunBudgetHooks {
  /** At the start of each drive: `start` for a new run, or settles the step a previous process left open. */
  atDrive(writer: RunWriter): Promise<void>;
  /** Reserves the step's worst case; returns the (maybe smaller) `max_tokens`. Throws `RunBudgetStop`. */
  beforeStep(
    writer: RunWriter,
    step: number,
    planned: { maxTokens: number; promptBound: number },
    price: ModelPrice,
  ): Promise<{ maxTokens: number; promptBound: number }>;
  /** Settles the step at what it cost (the response and every billed failed attempt). */
  afterStep(writer: RunWriter, step: number): Promise<void>;
  /** At the end of each drive: settles a step left open by an error (not when fenced). */
  afterDrive(writer: RunWriter): Promise<void>;
}

/** Builds the hooks for `budgets` (none: `undefined`, so the loop pays nothing). */
export function runBudgetHooks(
  budgets: readonly RunBudget[],
  store: EventStore,
  now: () => number,
): RunBudgetHooks | undefined {
  if (budgets.length === 0) return undefined;
  // Steps reserved and not yet settled in this process: runId -> step and spend before it.
  const open = new Map<string, { step: number; spentBefore: number }>();
  // New runs whose `start` is asked with their first reservation (`startAndReserve`).
  const startsDeferred = new Map<string, Set<RunBudget>>();
  const deferStart = (runId: string, budget: RunBudget) => {
    const set = startsDeferred.get(runId) ?? new Set<RunBudget>();
    set.add(budget);
    startsDeferred.set(runId, set);
  };
  const settledOf = (budget: RunBudget): Map<string, number> => {
    let settled = settledByBudget.get(budget);
    if (!settled) {
      settled = new Map<string, number>();
      settledByBudget.set(budget, settled);
    }
    return settled;
  };

  const settleStep = async (run: RunBudgetRun, step: number, usd: number) => {
    for (const budget of budgets) {
      await ask(budget, `settle step ${step}`, () =>
        budget.settle(run, { step, usd: Math.max(0, usd), now: now() }),
      );
      settledOf(budget).set(run.runId, step);
    }
  };

  return {
    async atDrive(writer) {
      const fold = writer.fold;
      if (fold.end) return;
      const run = runOf(fold);
      if (fold.steps === 0 && !fold.orphanRequest) {
        for (const budget of budgets) {
          if (!budget.start) continue;
          // Asked with the first step's reservation instead: one round trip for both.
          if (budget.startAndReserve) {
            deferStart(run.runId, budget);
            continue;
          }
          const verdict = await ask(budget, "run start", () => budget.start!(run, { now: now() }));
          if (!verdict.ok) refuse(verdict);
        }
        return;
      }
      // Resumed (maybe by another worker after a crash or a takeover): the last step may have
      // its response in the log but no settlement. Settle it from the log (settling twice does
      // nothing), so its reservation neither leaks nor counts twice.
      if (
        fold.steps === 0 ||
        budgets.every((budget) => settledOf(budget).get(run.runId) === fold.steps)
      )
        return;
      const events = await store.read(run.runId);
      await settleStep(run, fold.steps, stepCost(events, fold.steps));
    },
    async beforeStep(writer, step, planned, price) {
      const fold = writer.fold;
      const run = runOf(fold);
      let { maxTokens } = planned;
      const { promptBound } = planned;
      const reserved: RunBudget[] = [];
      const release = async () => {
        for (const budget of reserved)
          await ask(budget, `release step ${step}`, () =>
            budget.settle(run, { step, usd: 0, now: now() }),
          );
      };
      const deferred = startsDeferred.get(run.runId);
      startsDeferred.delete(run.runId);
      for (const budget of budgets) {
        let usd = worstCaseCost(promptBound, maxTokens, price);
        let verdict = deferred?.has(budget)
          ? await startAndReserve(budget, run, { step, usd, now }, release)
          : undefined;
        verdict ??= await ask(budget, `reserve step ${step}`, () =>
          budget.reserve(run, { step, usd, now: now() }),
        );
        if (!verdict.ok && verdict.availableUsd !== undefined) {
          // A smaller answer may still fit: shrink max_tokens like the run's own maxUsd does.
          const perToken =
            worstCaseCost(promptBound, 1, price) - worstCaseCost(promptBound, 0, price);
          const fits = Math.floor(
            (verdict.availableUsd - worstCaseCost(promptBound, 0, price)) / perToken,
          );
          if (fits >= 1 && fits < maxTokens) {
            usd = worstCaseCost(promptBound, fits, price);
            const retry = await ask(budget, `reserve step ${step}`, () =>
              budget.reserve(run, { step, usd, now: now() }),
            );
            if (retry.ok) {
              // Budgets asked before this one hold more than needed now; they settle to the actual cost.
              maxTokens = fits;
              verdict = retry;
            }
          }
        }
        if (!verdict.ok) {
          await release();
          refuse(verdict);
        }
        reserved.push(budget);
      }
      // Real spend, not committedUsd: that also counts an orphan request's estimate (a crashed
      // attempt), which the re-issued request of this step replaces.
      open.set(run.runId, { step, spentBefore: fold.state.spend.usd });
      return { maxTokens, promptBound };
    },
    async afterStep(writer, step) {
      const fold = writer.fold;
      const entry = open.get(fold.start.runId);
      if (!entry || entry.step !== step) return;
      open.delete(fold.start.runId);
      await settleStep(runOf(fold), step, fold.state.spend.usd - entry.spentBefore);
    },
    async afterDrive(writer) {
      startsDeferred.delete(writer.runId);
      const fold = writer.fold;
      if (fold.end) for (const budget of budgets) settledOf(budget).delete(writer.runId);
      const entry = open.get(writer.runId);
      if (!entry) return;
      open.delete(writer.runId);
      // A fenced writer leaves the reservation to the worker that took the run over: it
      // reserves the same step (one reservation) and settles it at what it really cost.
      if (writer.broken) return;
      await settleStep(runOf(fold), entry.step, fold.state.spend.usd - entry.spentBefore);
    },
  };
}

/**
 * The last step this process settled per run, per budget: shared by every agent built with the
 * same budget (a worker builds one per slice), so a paused run's next slice reads nothing.
 */
const settledByBudget = new WeakMap<RunBudget, Map<string, number>>();

/** What a run budget is told about the run. */
function runOf(fold: RunFold): RunBudgetRun {
  const start = fold.start as RunFold["start"] & { at?: number };
  return {
    runId: start.runId,
    agentId: start.agentId,
    context: (start.context ?? {}) as Record<string, JsonValue>,
    startedAt: typeof start.at === "number" ? start.at : Date.now(),
  };
}

/** What step `step` cost in the log: its response and every billed attempt. */
function stepCost(events: readonly StoredEvent[], step: number): number {
  let usd = 0;
  for (const event of events) {
    if (
      (event.type === "model-response" ||
        event.type === "model-retry" ||
        event.type === "model-error") &&
      event.step === step &&
      typeof event.costUsd === "number"
    )
      usd += event.costUsd;
  }
  return usd;
}

/** Asks a budget; a failure (its store down) pauses the run, never admits the step. */
async function ask<T>(budget: RunBudget, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) throw error;
    throw new RunBudgetUnavailableError(
      `[core] run budget ${budget.name} could not be checked (${what}): ${(error as Error)?.message ?? String(error)}; no model step was taken and the run is paused (resume it once the budget's store answers)`,
      { cause: error },
    );
  }
}

/** Stops the run with a budget's refusal. */
function refuse(verdict: Exclude<RunBudgetVerdict, { ok: true }>): never {
  throw new RunBudgetStop(verdict.reason, verdict.message);
}

/**
 * A new run's start and first reservation in one call. On a refusal nothing was taken: the
 * start is asked alone (a refused start stops the run) and `undefined` says "now reserve as
 * usual" (which may shrink the step to fit, and names the limit).
 */
async function startAndReserve(
  budget: RunBudget,
  run: RunBudgetRun,
  step: { step: number; usd: number; now: () => number },
  release: () => Promise<void>,
): Promise<RunBudgetVerdict | undefined> {
  const verdict = await ask(budget, `start and reserve step ${step.step}`, () =>
    budget.startAndReserve!(run, { step: step.step, usd: step.usd, now: step.now() }),
  );
  if (verdict.ok) return verdict;
  const started = await ask(budget, "run start", () => budget.start!(run, { now: step.now() }));
  if (!started.ok) {
    await release();
    refuse(started);
  }
  return undefined;
}
