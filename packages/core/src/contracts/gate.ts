/**
 * The Gate contract: judges one tool call before it runs.
 *
 * Failure rule: gates fail closed. A gate whose `check` throws or rejects is treated as a
 * `deny` with reason `gate_error`. `observe` is called after the call and may not break the
 * run: its errors are reported to `onError` and otherwise ignored.
 */

import type { JsonValue } from "../json.js";
import type { RunView } from "./run-view.js";

/** Where a gate sits in the pipeline (the step numbers of docs/architecture.md). */
export type GateStep =
  | "0"
  | "0.7"
  | "1"
  | "2"
  | "2.1"
  | "2.3"
  | "2.5"
  | "3"
  | "4"
  | "5"
  | "6"
  | "7";

/** What a gate sees of one tool call. */
export interface ToolCall {
  /** The tool's name. */
  tool: string;
  /** The parsed arguments. */
  args: Record<string, unknown>;
  /** The model's `tool_use` id (or a generated one under `guardTool`). */
  toolUseId: string;
  /** `runId:toolUseId`, stable across retries and resumes. */
  idempotencyKey: string;
  /** Flags of the tool. */
  sensitive: boolean;
  idempotent: boolean;
  /**
   * The run this call belongs to, or `undefined` for a guarded call outside any run: read-only
   * (but for the halt latch, which only closes), with typed per-gate memory through
   * `memory(gateMemory(name, init))`. A gate that wants the run halted returns a deny with
   * `halt: true` (and `haltReason`); it cannot change the run's calls, refusals, outputs or spend.
   */
  readonly run: RunView | undefined;
  /** Whether this call is being re-checked after a durable approval. */
  recheck?: boolean;
}

/** A gate lets the call through. */
export interface AllowDecision {
  type: "allow";
}

/** A gate refuses the call. */
export interface DenyDecision {
  type: "deny";
  /** A stable snake_case code, e.g. `policy_deny`, `tainted_argument`, `loop_detected`. */
  reason: string;
  /** What happened, for the model and the host. */
  message: string;
  /** What the model could do instead. */
  fixHints?: string[];
  /** Whether this refusal should halt the run (a gate may insist; RunGuard decides too). */
  halt?: boolean;
  /**
   * With `halt`, the reason the run halts for (`run.haltReason`), when it is not the refusal's
   * own: the RunGuard refuses the loop after a warning as `run_halted` and halts the run for
   * `loop_detected`. Default: `reason`.
   */
  haltReason?: string;
  /** Extra facts to record with the decision. */
  details?: Record<string, JsonValue>;
}

/** A gate wants a human to approve the call first. */
export interface AskDecision {
  type: "ask";
  /** A stable code naming the rule that asked. */
  reason: string;
  message: string;
  details?: Record<string, JsonValue>;
  /**
   * Every ask of the call, when several gates asked (a policy ask and a taint ask): core
   * combines them into one approval request that names them all, and the approval covers
   * exactly these. Gates leave it out.
   */
  reasons?: ReadonlyArray<AskReason>;
}

/** One reason a call waits on a person. */
export interface AskReason {
  reason: string;
  message: string;
  /** The gate that asked. */
  gate?: string;
}

/** What a gate decides. */
export type GateDecision = AllowDecision | DenyDecision | AskDecision;

/** What happened to a call, given to `observe`. */
export interface CallOutcome {
  call: ToolCall;
  status: "ok" | "error" | "refused";
  /** The refusal reason, when refused. */
  reason?: string;
  durationMs: number;
}

/**
 * A gate run in shadow mode (`shadow(gate)` in `@loopguard/policy`): it never refuses (its
 * `check` allows) and core calls `judge` beside the enforcing pipeline, recording a
 * `shadow-decision` event wherever the candidate would have decided differently. A `judge`
 * that throws is recorded as an error and never affects enforcement.
 */
export interface ShadowGate extends Gate {
  readonly mode: "shadow";
  judge(call: ToolCall): GateDecision | Promise<GateDecision>;
}

/** Whether a gate runs in shadow mode. */
export function isShadowGate(gate: Gate): gate is ShadowGate {
  return (
    (gate as Partial<ShadowGate>).mode === "shadow" &&
    typeof (gate as Partial<ShadowGate>).judge === "function"
  );
}

/**
 * A gate: one step of the tool-call pipeline.
 *
 * Fails closed: a `check` that throws is a deny (`gate_error`).
 */
export interface Gate {
  /** A short name for the decision record, e.g. `policy`, `taint`. */
  readonly name: string;
  /** Where the gate runs; gates are ordered by step, then by the order given. */
  readonly step: GateStep;
  /** A stable digest of the gate's settings, recorded in `run-start`. */
  digest?(): string;
  /** Judges the call. */
  check(call: ToolCall): GateDecision | Promise<GateDecision>;
  /** Sees the outcome of an admitted or refused call; errors go to `onError`. */
  observe?(outcome: CallOutcome): void | Promise<void>;
}
