/**
 * Finds the loop a stored run belongs to in an agent's tree: a root run is the agent's own;
 * a child run (its `run-start` names a parent) runs in the loop of the child agent that the
 * parent's tool delegates to, under the tree's rules. So `rootAgent.resume(childRunId)` (a
 * worker advancing a child on its own) and `rootAgent.approve(childRunId, ...)` work.
 */
import type { AgentStreamSink } from "./agent-stream.js";
import { childLoopOf } from "./child-loop.js";
import type { StoredEvent } from "./contracts/event-store.js";
import { delegationOf } from "./delegation.js";
import { AmbiguousApprovalError, InvalidArgumentError } from "./errors.js";
import type { ChildApprovalRequest } from "./events.js";
import { guardRunModel } from "./fold.js";
import { type LoopContext, open } from "./loop-context.js";
import { type ApprovalAnswer, recordAnswer } from "./record-answer.js";
import { withRunLease } from "./run-lease.js";
import type { RunWriter } from "./run-writer.js";

/** Ids `childRunId` makes; other ids are roots (their log is not read to find out). */
const childIdPattern = /\.c[0-9a-f]{12}$|^run_c[0-9a-f]{40}$/;

/**
 * The loop that advances run `runId` of `root`'s tree. For a child run, refuses a tree whose
 * runs another agent started (see `checkStartedBy`); the run itself is checked by the caller
 * once it is open (`checkStartedBy(loop, writer.fold.start)`), so a root's log is read once.
 */
export async function loopOfRun(
  root: LoopContext,
  runId: string,
  checkRoot = false,
): Promise<LoopContext> {
  if (typeof runId !== "string" || !childIdPattern.test(runId)) {
    if (checkRoot) {
      const start = await firstEvent(root, runId);
      if (start?.type === "run-start") checkStartedBy(root, start, runId);
    }
    return root;
  }
  const start = await firstEvent(root, runId);
  if (!start || start.type !== "run-start" || !start.parent) return root;
  const parentLoop = await loopOfRun(root, start.parent.runId, true);
  const item = parentLoop.tools.get(start.parent.tool);
  const delegation = item ? delegationOf(item) : undefined;
  if (!delegation)
    throw new InvalidArgumentError(
      `[core] run ${runId} is a child of run ${start.parent.runId} through tool "${start.parent.tool}", which agent "${parentLoop.config.agentId}" does not have as an asTool tool; resume it through the root agent of its tree (run ${start.parent.rootRunId})`,
    );
  const loop = childLoopOf(parentLoop, delegation.loop as LoopContext);
  if (checkRoot) checkStartedBy(loop, start, runId);
  return loop;
}

/**
 * Opens stored run `runId` of `root`'s tree for `resume`, `resumeStream` or `approve`: the loop
 * that advances it and its writer, refusing a run another agent started (`checkStartedBy`).
 */
export async function openTreeRun(
  root: LoopContext,
  runId: string,
  sink?: AgentStreamSink,
): Promise<{ target: LoopContext; writer: RunWriter }> {
  const target = await loopOfRun(root, runId);
  const writer = await open(target, runId, sink);
  checkStartedBy(target, writer.fold.start, runId);
  return { target, writer };
}

/**
 * Refuses to advance or answer a run that another agent started: its `run-start` names another
 * `agentId`, so going on here would run it under this agent's gates, tools and budgets instead
 * of its own. A guarded run (`withRun`/`guardTool`) has no loop: any agent may record an answer
 * to it.
 */
export function checkStartedBy(
  loop: LoopContext,
  start: { agentId: string; model: string },
  runId: string,
): void {
  if (start.model === guardRunModel || start.agentId === loop.config.agentId) return;
  throw new InvalidArgumentError(
    `[core] run ${runId} was started by agent "${start.agentId}", not by agent "${loop.config.agentId}": resuming or answering it here would go on under this agent's gates, tools and budgets; use the agent that started it (createAgent({ agentId: "${start.agentId}", ... }) with its configuration)`,
  );
}

/** A run's first event (its `run-start`), read without the whole log where the store allows. */
async function firstEvent(loop: LoopContext, runId: string): Promise<StoredEvent | undefined> {
  const store = loop.store;
  if (store.readBatches) {
    for await (const batch of store.readBatches(runId, { batchSize: 1 })) return batch[0];
    return undefined;
  }
  return (await store.read(runId))[0];
}

/**
 * Records a person's answer in the run that asked: the run itself, or (a parent parked on a
 * child's approval) the child or grandchild named by the parent's `child-run-wait`, with that
 * run taken for the write. Returns whether the answer went to a child.
 */
export async function recordTreeAnswer(
  loop: LoopContext,
  writer: RunWriter,
  answer: ApprovalAnswer,
): Promise<boolean> {
  const fold = writer.fold;
  const turn = fold.pendingTurn;
  const waiting: ChildApprovalRequest[] = [];
  for (const child of turn?.children?.values() ?? [])
    if (!child.end && child.wait?.status === "awaiting_approval")
      waiting.push(...(child.wait.approvals ?? []));
  if (fold.awaitingApproval || waiting.length === 0 || fold.end) {
    await recordAnswer(writer, answer, loop.now);
    return false;
  }
  const target = answer.requestId
    ? waiting.find((request) => request.requestId === answer.requestId)
    : waiting.length === 1
      ? waiting[0]
      : undefined;
  if (!target)
    throw new AmbiguousApprovalError(
      fold.start.runId,
      waiting.map((request) => request.requestId),
      answer.requestId,
    );
  const childLoop = await loopOfRun(loop, target.runId);
  await withRunLease(
    loop.store,
    target.runId,
    async () => recordAnswer(await open(childLoop, target.runId), answer, loop.now),
    loop.reportError,
  );
  return true;
}
