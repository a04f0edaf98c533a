import type { AgentStreamSink } from "./agent-stream.js";
import { treeLeftUsd } from "./budget-tree.js";
import type { DenyDecision, ToolCall } from "./contracts/gate.js";
import type { ToolUseBlock } from "./contracts/model.js";
import type { Vault } from "./contracts/vault.js";
import type { RunFold } from "./fold.js";
import type { JsonValue } from "./json.js";
import type { RunWriter } from "./run-writer.js";
import type { Tool } from "./tool.js";
import type { CallScope, ToolCallPath } from "./tool-call.js";
import { admitInTree } from "./tree-admission.js";

/** What the tool turn needs of the agent. */
export interface ToolTurnContext {
  path: ToolCallPath;
  tools: ReadonlyMap<string, Tool<any, any>>;
  vault: Vault | undefined;
}

/**
 * Runs the pending tool calls of the last assistant turn: each call is judged in order and
 * admitted calls run concurrently; intents left without a result by a crash re-run with the
 * same idempotency key. Returns `true` when the run parks on an approval.
 */
export async function runToolTurn(
  context: ToolTurnContext,
  writer: RunWriter,
  signal: AbortSignal,
  sink?: AgentStreamSink,
): Promise<boolean> {
  const fold = writer.fold;
  const turn = fold.pendingTurn!;
  const scope = turnScope(writer, fold, context, sink);
  const executions: Promise<unknown>[] = [];
  // A delegated call whose child parked leaves its intent open: the turn parks with it.
  let childParked = false;
  // A call's execution runs while later calls of the turn are still being judged; if it fails
  // then (a store out of space, a vault that throws), nobody awaits it yet. Marking it handled
  // at once keeps that from becoming an unhandled rejection that kills the host process; the
  // failure still surfaces below, from allSettled.
  const started = (execution: Promise<{ type: string }>) => {
    execution.then(
      (performance) => {
        if (performance.type === "parked") childParked = true;
      },
      () => undefined,
    );
    executions.push(execution);
  };
  let parked = false;
  let thrown: { error: unknown } | undefined;
  try {
    for (const use of turn.toolUses) {
      if (turn.results.has(use.id)) continue;
      const intent = turn.intents.get(use.id);
      const item = context.tools.get(use.name);
      if (intent) {
        // Admitted before a crash and never finished: re-run with the same idempotency key.
        started(
          context.path.perform(
            scope,
            item!,
            use.id,
            intent.args as Record<string, unknown>,
            intent.idempotencyKey,
            signal,
          ),
        );
        continue;
      }
      const call = callOf(context, fold, use, item, turn.approvals.has(use.id));
      // Across a tree held in this process, one admission at a time (gates count the tree).
      const admission = await admitInTree(fold.state, () =>
        context.path.admit(scope, call, item, signal),
      );
      if (admission.type === "parked") parked = true;
      else if (admission.type === "admitted")
        started(
          context.path.perform(
            scope,
            item!,
            use.id,
            admission.args,
            call.idempotencyKey,
            signal,
            call,
          ),
        );
    }
  } catch (error) {
    thrown = { error };
  }
  // Calls already started must settle before the turn ends, even when a later write of this
  // turn failed: their own failures surface here (first), never as unhandled rejections.
  const settled = await Promise.allSettled(executions);
  const failed = settled.find(
    (outcome): outcome is PromiseRejectedResult => outcome.status === "rejected",
  );
  if (failed) throw failed.reason;
  if (thrown) throw thrown.error;
  return (parked || childParked) && writer.fold.pendingTurn !== undefined;
}

/** The scope of this turn's calls: the log, this turn's recorded approvals and the budget. */
function turnScope(
  writer: RunWriter,
  fold: RunFold,
  host: ToolTurnContext,
  sink: AgentStreamSink | undefined,
): CallScope {
  const turn = fold.pendingTurn!;
  const write = (...events: Parameters<RunWriter["write"]>) => writer.write(...events);
  return {
    // A delegating tool's child run is linked to this run: its log, budget, gates and stream.
    parentCall: (callId, args, signal) => ({
      fold,
      write,
      step: turn.step,
      callId,
      args,
      signal,
      sink,
      host,
    }),
    runId: fold.start.runId,
    agentId: fold.start.agentId,
    step: turn.step,
    write: (...events) => writer.write(...events),
    recordedApproval: (toolUseId) => turn.approvals.get(toolUseId),
    budget: (item) => toolBudget(fold, item),
    // Claim before effect: a worker whose claim was taken over executes nothing.
    beforeEffect: () => writer.confirmOwner(),
  };
}

function callOf(
  context: ToolTurnContext,
  fold: RunFold,
  use: ToolUseBlock,
  item: Tool<any, any> | undefined,
  recheck: boolean,
): ToolCall {
  const input = use.input ?? {};
  const call: ToolCall = {
    tool: use.name,
    // Gates judge real values (a policy reads the real email domain); the log keeps tokens.
    args: (context.vault ? context.vault.reveal(input) : input) as Record<string, unknown>,
    toolUseId: use.id,
    idempotencyKey: `${fold.state.runId}:${use.id}`,
    sensitive: item?.sensitive ?? false,
    idempotent: item?.idempotent ?? false,
    run: fold.state,
    ...(recheck ? { recheck: true } : {}),
  };
  if (typeof use.input !== "object" || use.input === null || Array.isArray(use.input)) {
    call.args = { __invalid_input__: use.input as JsonValue };
  }
  return call;
}

/**
 * Step 5 for a tool with a price: refuses a call the run's USD budget cannot cover, counting
 * its tree (every ancestor's cap, and the spend of children running beside it).
 */
function toolBudget(fold: RunFold, item: Tool<any, any> | undefined): DenyDecision | undefined {
  if (!item || item.costUsd === 0) return undefined;
  const max = fold.start.budget.maxUsd;
  const cost = `This call costs $${item.costUsd.toFixed(4)}`;
  const fixHints = ["Finish with what you have; tell the user the budget ran out."];
  if (max !== undefined && fold.committedUsd + item.costUsd > max)
    return {
      type: "deny",
      reason: "budget_exceeded",
      message: `${cost} and the run has $${Math.max(0, max - fold.committedUsd).toFixed(4)} left of its $${max} budget.`,
      fixHints,
    };
  const treeLeft = treeLeftUsd(fold);
  if (treeLeft !== undefined && item.costUsd > treeLeft)
    return {
      type: "deny",
      reason: "budget_exceeded",
      message: `${cost} and the run's tree of agents has $${Math.max(0, treeLeft).toFixed(4)} left of its budget (the parent's, less what its running children use).`,
      fixHints,
    };
  return undefined;
}
