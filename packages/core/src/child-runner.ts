/**
 * The ChildRunner seam: where the child run of an `asTool` call runs. The default runs it in
 * this process, inside the parent's call. A worker (e.g. PostgreSQL workers) plugs in its own:
 * it creates the child's log, hands the child to another job and answers `parked`; the parent
 * then parks as `awaiting_child`. When the child ends, the worker resumes the parent: its call
 * runs again with the same child run id, and the runner answers with the child's recorded
 * outcome (`control.recorded()`), without running anything twice.
 *
 * Failure rule: a runner that throws fails the call (the parent's model reads `child_failed`);
 * the child's log, if it has one, is left as it is and a resume finds it.
 */
import type { Budget, ChildApprovalRequest } from "./events.js";
import type { RunResult } from "./run-result.js";

/** The child run a parent's call asks for. */
export interface ChildRunRequest {
  /** The child's run id: `childRunId(parentRunId, callId)`. */
  childRunId: string;
  parentRunId: string;
  rootRunId: string;
  /** The parent's `tool_use` id. */
  callId: string;
  /** The parent's tool (the `asTool` name). */
  tool: string;
  /** The child agent's id. */
  agentId: string;
  /** 1 for a child of a root run. */
  depth: number;
  /** The child's caps (its budget within the parent's). */
  budget: Budget;
}

/** How a child run stands for its parent. */
export type ChildRunOutcome =
  /** The child ended (completed, stopped, halted or failed): its result. */
  | { type: "ended"; result: RunResult }
  /**
   * The child parked: on an approval (`awaiting_approval`, the requests with their chain), or
   * it runs elsewhere (`awaiting_child`). The parent parks with the same status.
   */
  | {
      type: "parked";
      status: "awaiting_approval" | "awaiting_child";
      approvals?: ChildApprovalRequest[];
    };

/** What a runner can do with the child (all of it bound to the parent's call). */
export interface ChildRunControl {
  /**
   * Runs the child here: starts it (its log does not exist yet) or resumes it (it does), until
   * it ends or parks; a child that already ended is not run again (its recorded outcome).
   */
  runHere(): Promise<ChildRunOutcome>;
  /**
   * The child as its log stands, without advancing it: `ended` or `parked` on an approval;
   * `undefined` when it has no log yet or is unfinished.
   */
  recorded(): Promise<ChildRunOutcome | undefined>;
  /**
   * Writes the child's `run-start` when it has none (its task, caps and parent link), so another
   * process can advance it with `rootAgent.resume(childRunId)`. Does nothing when it exists.
   */
  create(): Promise<void>;
  /** The parent's signal: aborted when the parent is stopped. */
  readonly signal: AbortSignal;
}

/** Runs (or hands off) the child run of one parent call. */
export interface ChildRunner {
  /** A name for diagnostics, e.g. `inline`, `pg-boss`. */
  readonly name: string;
  /**
   * `true` when `run` runs the child in this process (through `control.runHere()`), so the
   * parent's budget sees the child's spend step by step. Otherwise (the default) the child may
   * run elsewhere: from its start until its outcome is recorded it counts at its caps in every
   * ancestor's budget, and the delegating calls of one turn split what is left between them.
   */
  readonly runsHere?: boolean;
  run(request: ChildRunRequest, control: ChildRunControl): Promise<ChildRunOutcome>;
}

/** The default: the child runs in this process, inside the parent's call. */
export const inlineChildRunner: ChildRunner = Object.freeze({
  name: "inline",
  runsHere: true,
  run: (_request: ChildRunRequest, control: ChildRunControl) => control.runHere(),
});
