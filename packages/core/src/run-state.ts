import type {
  AdmittedCall,
  GateMemoryKey,
  RefusedCall,
  RunView,
  SeenOutput,
  Spend,
} from "./contracts/run-view.js";
import type { JsonValue } from "./json.js";

export type { AdmittedCall, RefusedCall, SeenOutput, Spend } from "./contracts/run-view.js";

/** What a child run inherits of its ancestors when its parent delegates (see `RunState.inherit`). */
export interface Lineage {
  /** The root's task (the user's words). */
  task: string | undefined;
  /** The outputs every ancestor had read when the parent made the call, oldest first. */
  outputs: readonly SeenOutput[];
  /** The calls every ancestor had made up to and including the delegating call. */
  calls: readonly AdmittedCall[];
}

/**
 * The lineage a parent hands the child of its call `callId`: what the parent's view holds
 * (its own lineage first) up to that call.
 */
export function lineageOf(parent: RunView, callId: string): Lineage {
  // The parent's own call (a descendant's call may carry the same tool-use id): the last one.
  const index = parent.calls.findLastIndex(
    (call) => call.toolUseId === callId && call.runId === undefined,
  );
  const call = index >= 0 ? parent.calls[index] : undefined;
  const outputsBefore = call?.outputsBefore ?? parent.outputs.length;
  return {
    task: parent.task,
    outputs: parent.outputs.slice(0, outputsBefore).map((output) => ({ ...output })),
    calls: (index >= 0 ? parent.calls.slice(0, index + 1) : parent.calls).map((entry) => ({
      ...entry,
    })),
  };
}

/** A descendant's call, refusal or output, recorded in its ancestors' states. */
export type TreeEntry =
  | { kind: "call"; runId: string; call: AdmittedCall }
  | { kind: "refusal"; runId: string; refusal: RefusedCall }
  | { kind: "output"; runId: string; output: SeenOutput };

/** Where a run started a child: the lengths of its calls, refusals and outputs then. */
export interface TreeMark {
  childRunId: string;
  calls: number;
  refusals: number;
  outputs: number;
}

/** A run's own history and its descendants', in order, each entry marked with its run id. */
export interface TreeHistory {
  calls: AdmittedCall[];
  refusals: RefusedCall[];
  outputs: SeenOutput[];
}

/** Who is running, for roles and diagnostics. */
export interface RunContextInput {
  runId?: string;
  agentId?: string;
  roles?: readonly string[];
  /** The task (the user's request), for gates that trust what the user wrote. */
  task?: string;
  /** Anything else gates may read (tenant, user id, ...); must be JSON. */
  attributes?: Record<string, JsonValue>;
}

/**
 * The live state of one run, shared by the loop, `guardTool` and every gate: the halt latch,
 * the admitted and refused calls, the outputs seen and the spend. It is rebuilt from the
 * run's log on resume, so everything here that matters is derived from events.
 */
export class RunState implements RunView {
  readonly runId: string;
  readonly agentId: string;
  readonly roles: readonly string[];
  readonly attributes: Readonly<Record<string, JsonValue>>;
  /**
   * The trusted task: the run's first user message; for a child run, its root's (the user's
   * words), since a child's own task is text its parent's model wrote (see `inherit`).
   */
  get task(): string | undefined {
    return this.#task;
  }
  readonly calls: AdmittedCall[] = [];
  readonly refusals: RefusedCall[] = [];
  readonly outputs: SeenOutput[] = [];
  readonly spend: Spend = { usd: 0, inputTokens: 0, outputTokens: 0, steps: 0 };
  #memory: Map<GateMemoryKey<unknown>, unknown> | undefined;
  #task: string | undefined;
  #inheritedOutputs = 0;
  #inherited = false;
  #halted = false;
  #haltReason: string | undefined;
  #listeners = new Set<(reason: string, source: string) => void>();
  #treeParent: RunState | undefined;
  #hasTreeChildren = false;

  constructor(input: Required<Pick<RunContextInput, "runId" | "agentId">> & RunContextInput) {
    this.runId = input.runId;
    this.agentId = input.agentId;
    this.roles = Object.freeze([...(input.roles ?? [])]);
    this.attributes = Object.freeze({ ...(input.attributes ?? {}) });
    this.#task = input.task;
  }

  /**
   * Makes a child run's view carry its ancestors' provenance, before any gate reads it: the
   * trusted task becomes the lineage's (the root's), and the outputs the ancestors had read
   * and the calls they had made when the parent delegated come first (the run's own calls
   * keep their place: `outputsBefore` counts the inherited outputs). A value the parent read
   * in an untrusted output is then untrusted in the child, as it was in the parent. Once.
   */
  inherit(lineage: Lineage): void {
    if (this.#inherited) return;
    this.#inherited = true;
    const shift = lineage.outputs.length;
    for (const call of this.calls)
      if (call.outputsBefore !== undefined) call.outputsBefore += shift;
    this.outputs.unshift(...lineage.outputs);
    this.calls.unshift(...lineage.calls);
    this.#task = lineage.task;
    this.#inheritedOutputs = shift;
  }

  /**
   * The parent run's state when this run is a child whose parent is held in this process (or
   * was read from the store for a child resumed alone): every call, refusal and output this
   * run records is also recorded in each ancestor's state, and the ancestors' gates judge this
   * run's calls with their own state (the tree as that ancestor sees it).
   */
  get treeParent(): RunState | undefined {
    return this.#treeParent;
  }

  /** Links this (child) run to its parent's state; a run that would reach itself is refused. */
  linkTreeParent(parent: RunState): void {
    for (let above: RunState | undefined = parent; above; above = above.#treeParent)
      if (above === this) throw new Error("[core] a run cannot be its own ancestor");
    this.#treeParent = parent;
    parent.#hasTreeChildren = true;
  }

  /**
   * The state of the top of this run's tree as held here (itself when it has no parent), or
   * `undefined` for a run that is in no tree (no parent, no child linked): what the tree's
   * calls are admitted one at a time under (`admitInTree`). O(depth).
   */
  get treeTop(): RunState | undefined {
    if (!this.#treeParent) return this.#hasTreeChildren ? this : undefined;
    let top: RunState = this.#treeParent;
    while (top.#treeParent) top = top.#treeParent;
    return top;
  }

  /**
   * Records a descendant's call, refusal or output in this state and every ancestor's (marked
   * with the descendant's run id): O(depth), never a scan of the tree.
   */
  static recordInAncestors(state: RunState, entry: TreeEntry): void {
    for (let above = state.#treeParent; above; above = above.#treeParent) above.#adopt(entry);
  }

  #adopt(entry: TreeEntry): void {
    switch (entry.kind) {
      case "call":
        this.calls.push({ ...entry.call, outputsBefore: this.outputs.length, runId: entry.runId });
        return;
      case "refusal":
        this.refusals.push({ ...entry.refusal, runId: entry.runId });
        return;
      case "output":
        this.outputs.push({ ...entry.output, runId: entry.runId });
    }
  }

  /**
   * Inserts a stored descendant's history at the place its parent run started it (its
   * `child-run-start`): the descendant's calls, refusals and outputs (its own descendants'
   * included), with `outputsBefore` kept consistent on both sides. Used when a run is read
   * back from its log, before any gate reads it.
   */
  spliceDescendant(at: TreeMark, history: TreeHistory): void {
    const shift = history.outputs.length;
    if (shift > 0)
      for (let index = at.calls; index < this.calls.length; index += 1) {
        const call = this.calls[index]!;
        if (call.outputsBefore !== undefined) call.outputsBefore += shift;
      }
    this.outputs.splice(at.outputs, 0, ...history.outputs);
    this.calls.splice(
      at.calls,
      0,
      ...history.calls.map((call) => ({
        ...call,
        outputsBefore: at.outputs + (call.outputsBefore ?? shift),
      })),
    );
    this.refusals.splice(at.refusals, 0, ...history.refusals);
  }

  /** How many of `outputs` are the ancestors' (see `inherit`); 0 for a root run. */
  get inheritedOutputs(): number {
    return this.#inheritedOutputs;
  }

  /** A gate's memory of this run, made by `key.init` on first use (see `gateMemory`). */
  memory<T>(key: GateMemoryKey<T>): T {
    this.#memory ??= new Map();
    if (this.#memory.has(key)) return this.#memory.get(key) as T;
    const value = key.init(this);
    this.#memory.set(key, value);
    return value;
  }

  /** Whether the run's halt latch is set; once set, every later call is refused. */
  get halted(): boolean {
    return this.#halted;
  }

  /** Why the run was halted. */
  get haltReason(): string | undefined {
    return this.#haltReason;
  }

  /** Sets the halt latch. Halting twice keeps the first reason. */
  halt(reason: string, source = "host"): void {
    if (this.#halted) return;
    if (typeof reason !== "string" || reason.trim() === "") reason = "halted_by_host";
    this.#halted = true;
    this.#haltReason = reason;
    for (const listener of this.#listeners) listener(reason, source);
  }

  /** Runs `listener` when the latch is set (used by the loop to log the halt). */
  onHalt(listener: (reason: string, source: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Restores the latch from the log without notifying listeners. */
  restoreHalt(reason: string): void {
    this.#halted = true;
    this.#haltReason ??= reason;
  }
}
