/**
 * The run as a gate sees it: read-only (but for the halt latch, which only closes), plus typed
 * per-gate memory.
 *
 * Failure rule: a view cannot fail. Reading it never throws; a memory `init` that throws
 * propagates into the gate's `check`, which then fails closed like any gate that throws
 * (`gate_error`).
 */

import type { DecisionRecord } from "../events.js";
import type { JsonValue } from "../json.js";
import type { ScanResult } from "./scanner.js";

/** A call the pipeline admitted, in order. */
export interface AdmittedCall {
  tool: string;
  argsDigest: string;
  toolUseId: string;
  /** The arguments the model wrote (as logged), for gates that trace where a value appeared first. */
  args?: Readonly<Record<string, JsonValue>>;
  /** How many outputs the run had seen when this call was admitted (its place in the history). */
  outputsBefore?: number;
  /** The steps its decision passed (`2:policy`, `2.3:run_loop`, ...), when known. */
  passed?: readonly string[];
  /**
   * The descendant run (an `asTool` child, grandchild, ...) that made the call; absent for the
   * run's own calls and for those its ancestors had made before it was started.
   */
  runId?: string;
}

/** A call the pipeline refused. */
export interface RefusedCall {
  tool: string;
  toolUseId: string;
  reason: string;
  /** The full decision record. */
  decision: DecisionRecord;
  /** The descendant run that made the call; absent for the run's own (see `AdmittedCall.runId`). */
  runId?: string;
}

/** A tool output the model saw, with its scan. */
export interface SeenOutput {
  tool: string;
  toolUseId: string;
  /**
   * The content the model saw (the envelope included); with a vault, revealed, so gates
   * compare real values with real values.
   */
  text: string;
  scan?: Pick<ScanResult, "verdict" | "score"> & { rules: string[] };
  /** Whose text it is: `trusted` only when the tool declared `trust: "trusted"`. */
  trust?: "trusted" | "untrusted";
  /** The descendant run that read it; absent for the run's own (see `AdmittedCall.runId`). */
  runId?: string;
}

/** Money, tokens and steps spent so far. */
export interface Spend {
  usd: number;
  inputTokens: number;
  outputTokens: number;
  steps: number;
}

/**
 * A key to one gate's memory of a run, made once per gate (or per gate factory) with
 * `gateMemory`. Keys compare by identity, so two gates can never read each other's memory by
 * choosing the same name.
 */
export interface GateMemoryKey<T> {
  /** A name for diagnostics (e.g. `run_guard.loops`); not used for lookup. */
  readonly name: string;
  /** Makes the memory of a run the first time a gate asks for it (from what the run holds). */
  readonly init: (run: RunView) => T;
}

/**
 * Declares a piece of per-run memory for a gate: a cache the gate keeps between calls of one
 * run. It is never durable, so it must be rebuildable from the run's calls, refusals and
 * outputs (a resumed run starts with none).
 *
 * @example
 * const seen = gateMemory("my_gate.seen", () => new Set<string>());
 * const gate: Gate = { name: "my_gate", step: "2", check: (call) => {
 *   const memory = call.run?.memory(seen); ...
 * } };
 */
export function gateMemory<T>(name: string, init: (run: RunView) => T): GateMemoryKey<T> {
  return Object.freeze({ name, init });
}

/** What a gate may read of the run a call belongs to. */
export interface RunView {
  readonly runId: string;
  readonly agentId: string;
  readonly roles: readonly string[];
  readonly attributes: Readonly<Record<string, JsonValue>>;
  /**
   * The user's task, when known; gates may trust it. For a child run (`asTool`) it is its
   * root's task: the child's own task is text its parent's model wrote, so it is not here, and
   * `outputs` and `calls` start with what its ancestors had read and called when the parent
   * delegated (a value the parent read in untrusted text is untrusted in the child too).
   */
  readonly task: string | undefined;
  /** Whether the halt latch is set (every later call is refused as `run_halted`). */
  readonly halted: boolean;
  readonly haltReason: string | undefined;
  /**
   * Admitted calls, in order: the run's own and, in a run that delegates, every descendant's
   * as it is admitted (siblings included, each marked with its `runId`), so a gate counts and
   * traces the whole tree below the run. A child's start with its ancestors' (see `task`).
   */
  readonly calls: ReadonlyArray<Readonly<AdmittedCall>>;
  /** Refused calls, in order (descendants' included, as for `calls`). */
  readonly refusals: ReadonlyArray<Readonly<RefusedCall>>;
  /** Tool outputs seen, in order: the run's own and its descendants' (as for `calls`). */
  readonly outputs: ReadonlyArray<Readonly<SeenOutput>>;
  readonly spend: Readonly<Spend>;
  /**
   * Sets the halt latch (halting twice keeps the first reason). The one write a view allows:
   * the latch only ever closes, so a gate or a host holding the view can stop the run, never
   * resume it.
   */
  halt(reason: string, source?: string): void;
  /** This gate's memory of the run, made by `key.init` on first use. */
  memory<T>(key: GateMemoryKey<T>): T;
}
