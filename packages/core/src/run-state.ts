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
  /** The task the run was given (its first user message), when known; gates may trust it. */
  readonly task: string | undefined;
  readonly calls: AdmittedCall[] = [];
  readonly refusals: RefusedCall[] = [];
  readonly outputs: SeenOutput[] = [];
  readonly spend: Spend = { usd: 0, inputTokens: 0, outputTokens: 0, steps: 0 };
  #memory: Map<GateMemoryKey<unknown>, unknown> | undefined;
  #halted = false;
  #haltReason: string | undefined;
  #listeners = new Set<(reason: string, source: string) => void>();

  constructor(input: Required<Pick<RunContextInput, "runId" | "agentId">> & RunContextInput) {
    this.runId = input.runId;
    this.agentId = input.agentId;
    this.roles = Object.freeze([...(input.roles ?? [])]);
    this.attributes = Object.freeze({ ...(input.attributes ?? {}) });
    this.task = input.task;
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
