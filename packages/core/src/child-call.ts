/**
 * One delegated call: the parent's `asTool` call starts (or finds) its child run, runs it
 * through the tree's child runner, and records how it ended in the parent's log.
 *
 * Order in the parent's log: `tool-call-intent`, `child-run-start` (before the child's
 * `run-start`), then `child-run-end` (its spend joins the parent's) and `tool-call-result`;
 * or `child-run-wait` when the child parks (the intent stays open and the parent parks).
 */
import type { AgentStreamSink } from "./agent-stream.js";
import { attachNode, BudgetNode, capsSpend, childCaps, foldSpend, nodeOf } from "./budget-tree.js";
import { childLoopOf } from "./child-loop.js";
import { childRunId } from "./child-run-id.js";
import {
  type ChildRunControl,
  type ChildRunOutcome,
  type ChildRunRequest,
  inlineChildRunner,
} from "./child-runner.js";
import { type DelegatedOutcome, delegationOf, type ParentCall } from "./delegation.js";
import { drive } from "./drive-run.js";
import { CorruptLogError, RunNotFoundError } from "./errors.js";
import type { Budget, ChildApprovalRequest, ChildRunEndEvent, RunParent } from "./events.js";
import type { RunFold } from "./fold.js";
import type { JsonValue } from "./json.js";
import { type LoopContext, open, writerOptions } from "./loop-context.js";
import type { RecordedScan } from "./output.js";
import { withRunLease } from "./run-lease.js";
import { resultOf } from "./run-result.js";
import { type Lineage, lineageOf } from "./run-state.js";
import { RunWriter } from "./run-writer.js";
import { toolSpanIdOf } from "./spans.js";

/** What the parent's `asTool` says about its child. */
export interface ChildCallSpec {
  /** The tool's name (the parent's). */
  tool: string;
  /** The child agent's own loop. */
  child: LoopContext;
  /** The child's own budget (before its share of the parent's). */
  budget: Budget;
  share: number;
  /** The child's task from the call's arguments (real values). */
  task(args: Record<string, JsonValue>): string;
}

/** What the parent records of an ended child, kept beside its result. */
interface EndedChild {
  answer: string;
  end: Omit<ChildRunEndEvent, "type" | "step" | "callId" | "childRunId">;
}

const endedKey: unique symbol = Symbol("loopguard.endedChild");
type Ended = Extract<ChildRunOutcome, { type: "ended" }> & { [endedKey]?: EndedChild };

/** Runs the child of one parent call; never throws for the child's own failures. */
export async function runChildCall(
  spec: ChildCallSpec,
  call: ParentCall,
): Promise<DelegatedOutcome> {
  const started = performance.now();
  const host = call.host as LoopContext;
  const fold = call.fold;
  const parentRunId = fold.start.runId;
  const id = childRunId(parentRunId, call.callId);
  const depth = (fold.start.parent?.depth ?? 0) + 1;
  const failure = (code: string, message: string, status?: string): DelegatedOutcome => ({
    type: "error",
    kind: code,
    content: JSON.stringify({
      error: { code, message, childRunId: id, ...(status ? { status } : {}) },
    }),
    message,
    durationMs: performance.now() - started,
  });
  if (depth > host.config.maxDepth)
    return failure(
      "child_refused",
      `The agent "${spec.child.config.agentId}" would run at depth ${depth}, past this tree's maxDepth of ${host.config.maxDepth}; do the work without delegating it.`,
    );
  const loop = childLoopOf(host, spec.child);
  const recorded = fold.pendingTurn?.children?.get(call.callId);
  // Children run in this process (the default runner) are held live in the budget tree; one
  // its log started and no live node holds yet counts at its caps until reopened. A child run
  // elsewhere counts at its caps from its start until its outcome is recorded, and the
  // delegating calls of one turn not started yet split what is left (each its share of an
  // equal part), so parallel children elsewhere never jointly pass an ancestor's caps, and a
  // parent resumed halfway through starting them gives the rest what it would have.
  const runner = host.config.childRunner ?? inlineChildRunner;
  const inline = runner.runsHere === true;
  let budget: Budget;
  if (recorded) budget = recorded.start.budget;
  else {
    const split = inline ? 1 : unstartedDelegations(fold, host);
    const caps = childCaps(spec.budget, spec.share, nodeOf(fold), fold, host.now(), split);
    if ("exhausted" in caps)
      return failure(
        "child_budget",
        `The agent "${spec.child.config.agentId}" was not started: ${caps.exhausted}. Finish with what you have.`,
      );
    budget = caps.budget;
  }
  // The child's node counts its spend in every ancestor's from its first step on. It is made
  // before child-run-start is written, so the parent's fold never holds a started child with
  // no node; a recorded child counts at its caps until its log is open again (a crash may have
  // left it with spend this process has not read yet).
  const holder: { fold?: RunFold } = {};
  const node = new BudgetNode(
    budget,
    () =>
      holder.fold
        ? foldSpend(holder.fold, node)
        : recorded || !inline
          ? capsSpend(budget)
          : { usd: 0, tokens: 0, steps: 0 },
    nodeOf(fold),
    id,
  );
  if (!recorded) {
    try {
      await call.write({
        type: "child-run-start",
        step: call.step,
        callId: call.callId,
        tool: spec.tool,
        childRunId: id,
        agentId: loop.config.agentId,
        depth,
        budget,
      });
    } catch (error) {
      node.detach();
      throw error;
    }
  }
  const parent: RunParent = {
    runId: parentRunId,
    callId: call.callId,
    tool: spec.tool,
    depth,
    rootRunId: fold.start.parent?.rootRunId ?? parentRunId,
  };
  const request: ChildRunRequest = {
    childRunId: id,
    parentRunId,
    rootRunId: parent.rootRunId,
    callId: call.callId,
    tool: spec.tool,
    agentId: loop.config.agentId,
    depth,
    budget,
  };
  const task = spec.task(call.args);
  const control = childControl(loop, request, parent, task, call, node, holder, !!recorded);
  let outcome: ChildRunOutcome;
  try {
    outcome = await runner.run(request, control);
  } catch (error) {
    host.reportError(error, `child run ${id}`);
    // The runner failed after the child ran to its end (a queue that ran the job, then reported
    // an error): the child's real outcome stands, its effects and spend included.
    const late = await endedIfLogged(loop, id, lineageOf(fold.state, call.callId));
    if (!late) {
      const message = `The agent "${loop.config.agentId}" could not be run: ${(error as Error)?.message ?? String(error)}`;
      // The node counts the child until its end is in the parent's log (or it stays counted at
      // its caps, when what it spent is not known).
      if (!recorded?.end) await endFailedChild(call, id, holder.fold, loop, message);
      node.detach();
      return failure("child_failed", message);
    }
    outcome = late;
  }
  try {
    if (outcome.type === "parked") {
      await call.write({
        type: "child-run-wait",
        step: call.step,
        callId: call.callId,
        childRunId: id,
        status: outcome.status,
        ...(outcome.approvals && outcome.approvals.length > 0
          ? { approvals: chained(outcome.approvals, fold, parent) }
          : {}),
      });
      return { type: "parked", status: outcome.status, approvals: outcome.approvals };
    }
    const ended =
      (outcome as Ended)[endedKey] ??
      (await endedFromLog(loop, id, lineageOf(fold.state, call.callId)));
    if (!recorded?.end)
      await call.write({
        type: "child-run-end",
        step: call.step,
        callId: call.callId,
        childRunId: id,
        ...ended.end,
      });
    const status = ended.end.status;
    // A halted child halts its parent, also when its outcome is read after it ran elsewhere
    // (in this process the latch is linked live and this changes nothing).
    if (status === "halted" && !fold.state.halted)
      fold.state.halt(outcome.result.haltReason ?? "child_halted", `child:${id}`);
    if (status === "completed")
      return {
        type: "ok",
        content: ended.answer,
        trust: ended.end.trust,
        ...(ended.end.scan ? { scan: ended.end.scan as RecordedScan } : {}),
        durationMs: performance.now() - started,
      };
    const code =
      status === "halted"
        ? "child_halted"
        : ended.end.error?.includes("budget") || /budget|wall_clock/.test(outcome.result.why)
          ? "child_budget"
          : "child_failed";
    return failure(
      code,
      `The agent "${loop.config.agentId}" ${status === "halted" ? "was halted" : `ended ${status} (${outcome.result.why})`}${ended.end.error ? `: ${ended.end.error}` : ""}`,
      status,
    );
  } finally {
    node.detach();
  }
}

/**
 * Ends, in the parent's log, a child its runner could not run, when what it spent is known:
 * the fold of a child run here, or nothing for a child whose log was never written. Without
 * it the parent would count the child at its caps for the rest of the turn (it may have spent
 * them), and refuse its siblings `child_budget`. A child run elsewhere with a log stays so.
 */
async function endFailedChild(
  call: ParentCall,
  id: string,
  fold: RunFold | undefined,
  loop: LoopContext,
  message: string,
): Promise<void> {
  try {
    if (!fold && (await loop.store.read(id)).length > 0) return;
    const spend = fold?.state.spend;
    await call.write({
      type: "child-run-end",
      step: call.step,
      callId: call.callId,
      childRunId: id,
      status: "failed",
      costUsd: fold ? fold.committedUsd : 0,
      tokens: { input: spend?.inputTokens ?? 0, output: spend?.outputTokens ?? 0 },
      steps: fold?.steps ?? 0,
      treeSteps: fold?.treeSteps ?? 0,
      trust: "untrusted",
      error: message,
    });
  } catch (error) {
    loop.reportError(error, `ending child run ${id} in its parent's log`);
  }
}

/**
 * The delegating calls of the run's pending turn that have no child and no result yet (this
 * call among them): how many ways what is left is split when children run elsewhere.
 */
function unstartedDelegations(fold: RunFold, host: LoopContext): number {
  const turn = fold.pendingTurn;
  if (!turn) return 1;
  let count = 0;
  for (const use of turn.toolUses) {
    if (turn.results.has(use.id) || turn.children?.has(use.id)) continue;
    const item = host.tools.get(use.name);
    if (item && delegationOf(item)) count += 1;
  }
  return Math.max(1, count);
}

/** The runner's handle on the child: run it here, read it, or create it for another process. */
function childControl(
  loop: LoopContext,
  request: ChildRunRequest,
  parent: RunParent,
  task: string,
  call: ParentCall,
  node: BudgetNode,
  holder: { fold?: RunFold },
  startedBefore: boolean,
): ChildRunControl {
  const id = request.childRunId;
  const sink = call.sink ? depthSink(call.sink, parent.depth) : undefined;
  // The child's spans hang under this call's span in the parent's current session.
  const spanId = toolSpanIdOf(parent.runId, parent.callId, call.fold.resumeSeq);
  // What the parent had read and done when it wrote the task: the child inherits its provenance.
  const lineage = lineageOf(call.fold.state, call.callId);
  const create = async (withSink?: AgentStreamSink): Promise<RunWriter> => {
    const { options } = writerOptions(loop, id, withSink, spanId);
    const writer = new RunWriter(loop.store, id, 0, options);
    const context = call.fold.start.context;
    await writer.write({
      type: "run-start",
      runId: id,
      agentId: loop.config.agentId,
      task: loop.vault ? loop.vault.tokenize(task) : task,
      model: loop.model.model,
      ...(loop.config.system ? { system: loop.config.system } : {}),
      maxTokens: loop.maxTokensDefault,
      budget: request.budget,
      policyDigest: loop.policyDigest,
      toolDigest: loop.toolDigest,
      ...(context ? { context } : {}),
      parent,
    });
    writer.fold.state.inherit(lineage);
    // The parent's state sees every call and output of the child as it happens.
    writer.fold.state.linkTreeParent(call.fold.state);
    return writer;
  };
  const existing = async (withSink?: AgentStreamSink): Promise<RunWriter | undefined> => {
    try {
      return await open(loop, id, withSink, spanId, lineage, call.fold.state);
    } catch (error) {
      if (RunNotFoundError.isInstance(error)) return undefined;
      // A crash tore the child's first write: it never started, and its first append replaces
      // the torn file. Starting it (with the same id, so its calls keep their keys) loses nothing.
      if (CorruptLogError.isInstance(error) && error.neverStarted === true) return undefined;
      throw error;
    }
  };
  return {
    signal: call.signal,
    async create() {
      if (!(await existing())) await create();
    },
    async recorded() {
      const writer = await existing();
      if (!writer) return undefined;
      return settledOutcome(loop, writer.fold);
    },
    async runHere() {
      // One owner per child run, like every resume (a fresh child has no log to lease yet).
      const advance = async (writer: RunWriter, resumed: boolean): Promise<ChildRunOutcome> => {
        holder.fold = writer.fold;
        attachNode(writer.fold, node);
        if (resumed) await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
        const unlink = await linkHalts(call.fold, writer);
        try {
          await drive(loop, writer, call.signal, undefined, sink);
        } finally {
          unlink();
        }
        const fold = writer.fold;
        const settled = settledOutcome(loop, fold);
        if (settled) return settled;
        // Parked on a grandchild's approval: the parent parks on it too, with its chain.
        if (fold.status === "awaiting_approval")
          return { type: "parked", status: "awaiting_approval", approvals: approvalsOf(fold) };
        // Neither ended nor parked (paused, its store failed, or a grandchild runs elsewhere).
        return { type: "parked", status: "awaiting_child" };
      };
      // The parent logs child-run-start before the child's run-start: without it, no child log.
      if (startedBefore && (await existing()))
        return withRunLease(
          loop.store,
          id,
          async () => {
            const writer = await open(loop, id, sink, spanId, lineage, call.fold.state);
            return settledOutcome(loop, writer.fold) ?? advance(writer, true);
          },
          loop.reportError,
        );
      return advance(await create(sink), false);
    },
  };
}

/** The child's outcome from its fold when it ended or waits on a person's answer; else `undefined`. */
function settledOutcome(loop: LoopContext, fold: RunFold): ChildRunOutcome | undefined {
  if (fold.end) {
    const outcome: Ended = { type: "ended", result: resultOf(fold, loop.vault) };
    outcome[endedKey] = endedOf(fold);
    return outcome;
  }
  // Parked on its own approval. A child parked on its own child's approval is advanced: its
  // call runs again and finds the grandchild as it stands (answered, or parked again).
  if (fold.awaitingApproval)
    return { type: "parked", status: "awaiting_approval", approvals: approvalsOf(fold) };
  return undefined;
}

/**
 * What the parent records of an ended child: its spend, status and the provenance of its
 * answer. The answer is `trusted` only when every output of its view was: the ancestors'
 * (whose reads the parent's model had when it wrote the task) and its own. A child that read
 * nothing is as trusted as its task, never more. The scan is the worst of its own outputs.
 */
function endedOf(fold: RunFold): EndedChild {
  const end = fold.end!;
  const spend = fold.state.spend;
  let trust: "trusted" | "untrusted" = "trusted";
  let scan: RecordedScan | undefined;
  const inherited = fold.state.inheritedOutputs;
  for (const [index, output] of fold.state.outputs.entries()) {
    if (output.trust !== "trusted") trust = "untrusted";
    if (index < inherited) continue;
    if (
      output.scan &&
      (!scan ||
        rank(output.scan.verdict) > rank(scan.verdict) ||
        (rank(output.scan.verdict) === rank(scan.verdict) && output.scan.score > scan.score))
    )
      scan = {
        verdict: output.scan.verdict,
        score: output.scan.score,
        rules: [...output.scan.rules],
      };
  }
  return {
    answer: end.answer,
    end: {
      status: end.status as ChildRunEndEvent["status"],
      costUsd: fold.committedUsd,
      tokens: { input: spend.inputTokens, output: spend.outputTokens },
      steps: fold.steps,
      treeSteps: fold.treeSteps,
      trust,
      ...(scan && scan.verdict !== "clean" ? { scan } : {}),
      ...(end.error ? { error: end.error } : {}),
    },
  };
}

function rank(verdict: string): number {
  return verdict === "injection" ? 2 : verdict === "suspicious" ? 1 : 0;
}

/** Reads an ended child's log (for a runner that answered `ended` without `recorded()`). */
/** A child's outcome when its log already ends (its runner failed after it ran), else `undefined`. */
async function endedIfLogged(
  loop: LoopContext,
  id: string,
  lineage: Lineage,
): Promise<Ended | undefined> {
  let writer: RunWriter;
  try {
    writer = await open(loop, id, undefined, undefined, lineage);
  } catch {
    return undefined;
  }
  if (!writer.fold.end) return undefined;
  const ended: Ended = { type: "ended", result: resultOf(writer.fold, loop.vault) };
  ended[endedKey] = endedOf(writer.fold);
  return ended;
}

async function endedFromLog(loop: LoopContext, id: string, lineage: Lineage): Promise<EndedChild> {
  const writer = await open(loop, id, undefined, undefined, lineage);
  if (!writer.fold.end)
    throw new Error(
      `[core] the child runner said child run ${id} ended, but its log has no run-end`,
    );
  return endedOf(writer.fold);
}

/** The approvals a parked child waits on (its own and its children's), each with its chain from the child down. */
function approvalsOf(fold: RunFold): ChildApprovalRequest[] {
  const turn = fold.pendingTurn;
  if (!turn) return [];
  const self = {
    runId: fold.start.runId,
    agentId: fold.start.agentId,
    task: shortTask(fold.start.task),
  };
  const out: ChildApprovalRequest[] = [];
  for (const { request, decision } of turn.approvals.values()) {
    if (decision || turn.results.has(request.toolUseId)) continue;
    out.push({
      runId: fold.start.runId,
      requestId: request.requestId,
      tool: request.tool,
      toolUseId: request.toolUseId,
      reason: request.reason,
      message: request.message,
      expiresAt: request.expiresAt,
      chain: [self],
    });
  }
  for (const child of turn.children?.values() ?? []) {
    if (child.end || child.wait?.status !== "awaiting_approval") continue;
    out.push(...(child.wait.approvals ?? []));
  }
  return out;
}

/** Prefixes the parent's link (its run, task and the call) to each approval's chain. */
function chained(
  approvals: readonly ChildApprovalRequest[],
  fold: RunFold,
  parent: RunParent,
): ChildApprovalRequest[] {
  const link = {
    runId: fold.start.runId,
    agentId: fold.start.agentId,
    task: shortTask(fold.start.task),
    callId: parent.callId,
    tool: parent.tool,
  };
  return approvals.map((approval) => ({ ...approval, chain: [link, ...approval.chain] }));
}

function shortTask(task: string): string {
  return task.length > 500 ? `${task.slice(0, 497)}...` : task;
}

/**
 * The halt latch both ways: a halted child halts its parent, a halted parent its child (a
 * parent already halted is written into the child's log before the child takes a step).
 */
async function linkHalts(parent: RunFold, writer: RunWriter): Promise<() => void> {
  const child = writer.fold;
  if (parent.state.halted && !child.state.halted)
    await writer.write({
      type: "run-halt",
      reason: parent.state.haltReason ?? "parent_halted",
      source: "parent",
    });
  const up = child.state.onHalt((reason) =>
    parent.state.halt(reason, `child:${child.start.runId}`),
  );
  const down = parent.state.onHalt((reason) => child.state.halt(reason, "parent"));
  return () => {
    up();
    down();
  };
}

/** The parent's stream, with each forwarded child event tagged with its depth. */
function depthSink(sink: AgentStreamSink, depth: number): AgentStreamSink {
  return {
    thinking: sink.thinking,
    push(event) {
      // The child's end reaches the host as the parent's tool result; one run-end per stream.
      if (event.type === "run-end") return;
      sink.push({ ...event, depth: (event as { depth?: number }).depth ?? depth });
    },
  };
}
