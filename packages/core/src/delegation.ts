/**
 * The seam between the tool-call path and a delegating tool (`agent.asTool`): the path knows
 * only that a tool delegates and hands it the parent's call; what a child run is lives in
 * `as-tool.ts` and `child-runner.ts`.
 */
import type { AgentStreamSink } from "./agent-stream.js";
import type { ChildApprovalRequest, RunEvent } from "./events.js";
import type { RunFold } from "./fold.js";
import type { JsonValue } from "./json.js";
import type { RecordedScan } from "./output.js";

/** The parent's side of one delegated call: its run, its log and where its events go. */
export interface ParentCall {
  /** The parent run's fold (its budget, spend, halt latch, task). */
  fold: RunFold;
  /** Appends to the parent's log (durably, in order with its other events). */
  write(...events: RunEvent[]): Promise<void>;
  /** The parent's step (the model response that asked for the call). */
  step: number;
  callId: string;
  /** The call's arguments as the gates judged them (real values). */
  args: Record<string, JsonValue>;
  /** The parent run's signal (cancellation, wall clock). */
  signal: AbortSignal;
  /** The host's stream of the parent, when it is streamed. */
  sink?: AgentStreamSink | undefined;
  /** The parent agent (opaque here): its store, gates, vault, telemetry, runner. */
  host: unknown;
}

/** How a delegated call ended, as the parent's `tool-call-result` records it. */
export type DelegatedOutcome =
  | {
      type: "ok";
      /** The child's answer (tokenised by the tree's vault). */
      content: string;
      trust: "trusted" | "untrusted";
      scan?: RecordedScan | undefined;
      durationMs: number;
    }
  | {
      type: "error";
      /** `child_failed`, `child_halted`, `child_budget` or `child_refused`. */
      kind: string;
      /** The typed error the parent's model reads (JSON of `{ error: { code, message, childRunId, status } }`). */
      content: string;
      message: string;
      durationMs: number;
    }
  | {
      type: "parked";
      status: "awaiting_approval" | "awaiting_child";
      approvals?: ChildApprovalRequest[] | undefined;
    };

/** What makes a tool delegate: runs the child for one parent call. */
export interface Delegation {
  /** The child agent's id. */
  readonly agentId: string;
  /** The child agent's model id (its price must be known to the parent). */
  readonly model: string;
  /** The child agent itself (its identity finds cycles). */
  readonly agent: object;
  /** The child agent's tools (its own delegations make the tree's depth). */
  readonly tools: readonly object[];
  /** The child agent's own loop (opaque here), to resume one of its runs by id. */
  readonly loop: object;
  run(call: ParentCall): Promise<DelegatedOutcome>;
}

/** The key under which a tool carries its delegation. */
export const delegationKey: unique symbol = Symbol.for("loopguard.delegation");

/** The delegation of a tool made by `agent.asTool`, or `undefined` for any other tool. */
export function delegationOf(tool: object): Delegation | undefined {
  return (tool as { [delegationKey]?: Delegation })[delegationKey];
}
