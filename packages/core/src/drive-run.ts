import type { AgentStreamSink } from "./agent-stream.js";
import { manageContext, recoverFromOverflow } from "./context-manager.js";
import { AppendConflictError, LoopguardError } from "./errors.js";
import type { LoopContext } from "./loop-context.js";
import { endIfFinal, modelStep } from "./model-step.js";
import { RunBudgetStop, RunBudgetUnavailableError } from "./run-budgets.js";
import { type RunResult, resultOf, storeFailedResult } from "./run-result.js";
import type { RunWriter } from "./run-writer.js";
import { StopRun } from "./stop-run.js";
import { runToolTurn } from "./tool-turn.js";
import { yieldIfBusy } from "./yield-if-busy.js";

/**
 * Advances a run until it ends, parks on an approval or pauses: tool turns and model steps in
 * turn, under the run's cancellation signal and wall clock.
 */
export async function drive(
  loop: LoopContext,
  writer: RunWriter,
  signal: AbortSignal | undefined,
  pauseSignal?: AbortSignal,
  sink?: AgentStreamSink,
): Promise<RunResult> {
  const fold = writer.fold;
  const state = fold.state;
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(new StopRun("cancelled"));
  if (signal?.aborted) onOuterAbort();
  signal?.addEventListener("abort", onOuterAbort, { once: true });
  const wallClockMs = fold.start.budget.wallClockMs;
  let wallTimer: ReturnType<typeof setTimeout> | undefined;
  if (wallClockMs !== undefined) {
    const remaining = wallClockMs - fold.activeMs(loop.now());
    wallTimer = setTimeout(
      () => controller.abort(new StopRun("wall_clock", "wallClockMs")),
      Math.max(0, remaining),
    );
  }
  const unlisten = state.onHalt((reason, source) => {
    writer.write({ type: "run-halt", reason, source }).catch(() => undefined);
  });
  const runSignal = controller.signal;
  try {
    if (fold.withdrawn !== undefined && !fold.end)
      // A child its parent gave up on (the hand-off failed, it moved on): no step, no effect.
      await writer.write({
        type: "run-end",
        status: "stopped",
        answer: "",
        why: "withdrawn",
        error: `[core] child run ${fold.start.runId} was withdrawn: ${fold.withdrawn}; it takes no step (its parent's model was told the call failed)`,
      });
    await haltIfAncestorHalted(writer);
    await loop.runBudgets?.atDrive(writer);
    for (;;) {
      // Many runs stepping at once share the event loop: past a turn's slice, wait for the next.
      const pause = yieldIfBusy(writer.order);
      if (pause) await pause;
      if (fold.end) return resultOf(fold, loop.vault);
      if (pauseSignal?.aborted) return { ...resultOf(fold, loop.vault), why: "paused" };
      if (fold.pendingTurn) {
        const parked = await runToolTurn(loop, writer, runSignal, sink);
        if (parked) return resultOf(fold, loop.vault);
        if (state.halted && !fold.pendingTurn) {
          await writer.write({
            type: "run-end",
            status: "halted",
            answer: fold.lastAssistantText,
            why: "halted",
            error: `halted: ${state.haltReason}`,
          });
        }
        continue;
      }
      if (runSignal.aborted) throw runSignal.reason;
      if (
        fold.lastStopReason !== undefined &&
        fold.lastStopReason !== "tool_use" &&
        fold.lastStopReason !== "pause_turn"
      ) {
        await endIfFinal(writer);
        continue;
      }
      const window = loop.config.contextWindow;
      if (window) await manageContext(loop, window, writer, runSignal);
      try {
        await modelStep(loop, writer, runSignal, sink);
      } catch (error) {
        // Refused as too long despite the estimate: clear and send the step again.
        if (window && (await recoverFromOverflow(loop, window, writer, error))) continue;
        throw error;
      }
    }
  } catch (error) {
    // A run budget that cannot be checked pauses the run (fails closed, the run is not lost).
    if (RunBudgetUnavailableError.isInstance(error))
      return { ...resultOf(fold, loop.vault), why: "run_budget_unavailable", error: error.message };
    return endAfterError(loop, writer, error, runSignal);
  } finally {
    await loop.runBudgets
      ?.afterDrive(writer)
      .catch((error: unknown) => loop.reportError(error, "run budget settle"));
    clearTimeout(wallTimer);
    signal?.removeEventListener("abort", onOuterAbort);
    unlisten();
    // Spans still open (a parked, paused or stopped-early session) are emitted when the run is
    // resumed or ends, never twice; `loopguard trace` shows them from the log at any time.
    // The flush goes to the background: a run ends when its log is durable, not its traces.
    loop.telemetry.requestFlush();
  }
}

/**
 * Ends a run the loop could not continue: `stopped` for a budget, the wall clock or a
 * cancellation, `failed` for anything else. A broken log ends nothing (it cannot be written):
 * the result says why the run stopped in this process.
 */
async function endAfterError(
  loop: LoopContext,
  writer: RunWriter,
  error: unknown,
  runSignal: AbortSignal,
): Promise<RunResult> {
  const fold = writer.fold;
  if (writer.broken) {
    const broken = writer.broken;
    if (AppendConflictError.isInstance(broken))
      return resultOf(fold, loop.vault, {
        error: `${(broken as Error).message} (this process stopped advancing the run)`,
      });
    return storeFailedResult(fold, loop.vault, broken);
  }
  const stop =
    error instanceof StopRun
      ? error
      : runSignal.reason instanceof StopRun && runSignal.aborted
        ? runSignal.reason
        : undefined;
  try {
    if (stop) {
      await writer.write({
        type: "run-end",
        status: "stopped",
        answer: fold.lastAssistantText,
        why: stop.why,
        ...(stop.limit ? { limit: stop.limit } : {}),
        ...(stop instanceof RunBudgetStop ? { error: stop.detail } : {}),
      });
    } else {
      const message = LoopguardError.isInstance(error)
        ? (error as Error).message
        : `[core] the run failed unexpectedly: ${(error as Error)?.message ?? String(error)}`;
      if (!LoopguardError.isInstance(error)) loop.reportError(error, "run");
      await writer.write({
        type: "run-end",
        status: "failed",
        answer: fold.lastAssistantText,
        why: "error",
        error: message,
      });
    }
  } catch {
    if (writer.broken && !AppendConflictError.isInstance(writer.broken))
      return storeFailedResult(fold, loop.vault, writer.broken);
    return resultOf(fold, loop.vault, {
      error: String((writer.broken as Error)?.message ?? error),
    });
  }
  return resultOf(fold, loop.vault);
}

/**
 * A child whose parent (or any ancestor) is halted takes no step: the halt is written into its
 * log first. In-process the latch is linked live; this covers a child advanced alone (a
 * worker's job), whose ancestors' states are read from their logs when it is opened.
 */
async function haltIfAncestorHalted(writer: RunWriter): Promise<void> {
  const state = writer.fold.state;
  if (state.halted || writer.fold.end) return;
  for (let above = state.treeParent; above; above = above.treeParent)
    if (above.halted) {
      await writer.write({
        type: "run-halt",
        reason: above.haltReason ?? "parent_halted",
        source: "parent",
      });
      return;
    }
}
