/**
 * Errors of `@loopguard/core`: one base class and one subclass per code.
 *
 * Every error carries the brand `Symbol.for("loopguard.error")`, and every class that declares
 * a `marker` (a fixed string, `loopguard.error.<ClassName>`) stamps `Symbol.for(marker)` on its
 * instances and on those of its subclasses. `isInstance` reads these symbols, so it works
 * across two copies of the package and survives minification (no brand comes from a class's
 * runtime name).
 */
const brand = Symbol.for("loopguard.error");
const markerPrefix = "loopguard.error.";

/** A class of loopguard errors: what `LoopguardError`'s constructor reads off `new.target`. */
interface ErrorClass {
  readonly marker?: string;
}

/**
 * The base of every loopguard error. Messages start with the package, e.g. `[core]`.
 *
 * A subclass declares `static override readonly marker = "loopguard.error.MyError"` (a string
 * literal, so it survives minification) and passes its own fixed `code`; without a marker,
 * `MyError.isInstance` falls back to `instanceof` (one copy of the package only).
 */
export abstract class LoopguardError extends Error {
  /** The fixed marker string of this class (`Symbol.for(marker)` brands its instances). */
  static readonly marker: string = "loopguard.error.LoopguardError";
  readonly [brand] = true;
  /** A stable snake_case code, one per class. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    let name: string | undefined;
    const self = this as unknown as Record<symbol, boolean>;
    for (
      let type: unknown = new.target;
      typeof type === "function" && type !== Error;
      type = Object.getPrototypeOf(type)
    ) {
      if (!Object.hasOwn(type, "marker")) continue;
      const marker = (type as ErrorClass).marker!;
      self[Symbol.for(marker)] = true;
      name ??= marker.slice(markerPrefix.length);
    }
    // The name is for display only; `new.target.name` stands in for classes without a marker.
    this.name = (Object.hasOwn(new.target, "marker") ? name : undefined) ?? new.target.name;
  }

  /** Whether `value` is an error of this class (or a subclass), from any copy of the package. */
  static isInstance<T extends abstract new (...args: never[]) => LoopguardError>(
    this: T,
    value: unknown,
  ): value is InstanceType<T> {
    if (typeof value !== "object" || value === null) return false;
    const record = value as Record<symbol, unknown>;
    if (record[brand] !== true) return false;
    // Called unbound (e.g. passed as a callback) or on the base, it checks for any loopguard error.
    if (typeof this !== "function" || (this as unknown) === LoopguardError) return true;
    if (!Object.hasOwn(this, "marker")) return value instanceof this;
    return record[Symbol.for((this as ErrorClass).marker!)] === true;
  }
}

/** A public entry point was given something it cannot use. Code `invalid_argument`. */
export class InvalidArgumentError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.InvalidArgumentError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid_argument", message, options);
  }
}

/**
 * Another writer appended to the run first (the `expectedSeq` fence). Code `append_conflict`;
 * a subclass (the PostgreSQL store's `FencedError`) passes its own code and message.
 */
export class AppendConflictError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.AppendConflictError";
  readonly runId: string;
  readonly expectedSeq: number;
  readonly actualSeq: number;
  constructor(
    runId: string,
    expectedSeq: number,
    actualSeq: number,
    subclass?: { code: string; message: string; cause?: unknown },
  ) {
    super(
      subclass?.code ?? "append_conflict",
      subclass?.message ??
        `[core] append to run ${runId} expected seq ${expectedSeq} but the log holds ${actualSeq} events: another writer advanced this run; reload it before writing again`,
      subclass?.cause !== undefined ? { cause: subclass.cause } : undefined,
    );
    this.runId = runId;
    this.expectedSeq = expectedSeq;
    this.actualSeq = actualSeq;
  }
}

/** A run's log cannot be folded back into a run. Code `corrupt_log`. */
export class CorruptLogError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.CorruptLogError";
  /**
   * Set by a store when the log holds no complete event (a crash tore its first write): the run
   * never started, and starting it again with the same id replaces the file.
   */
  declare neverStarted?: true;
  constructor(message: string, options?: { cause?: unknown }) {
    super("corrupt_log", message, options);
  }
}

/** A run was asked for that the store does not hold. Code `run_not_found`. */
export class RunNotFoundError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.RunNotFoundError";
  readonly runId: string;
  constructor(runId: string, where: string) {
    super(
      "run_not_found",
      `[core] run ${runId} not found in ${where}; list runs with \`loopguard runs\``,
    );
    this.runId = runId;
  }
}

/**
 * A finished run whose log the in-memory store no longer holds: `memoryEventStore` keeps the
 * logs of unfinished runs and of the last `maxFinishedRuns` finished ones. Nothing can be
 * resumed, approved or replayed from it; its summary may still be listed. Code `run_log_dropped`.
 */
export class RunLogDroppedError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.RunLogDroppedError";
  readonly runId: string;
  constructor(runId: string, maxFinishedRuns: number) {
    super(
      "run_log_dropped",
      `[core] run ${runId} finished and its log was dropped by the in-memory event store (it keeps the logs of unfinished runs and of the last ${maxFinishedRuns} finished ones); give the agent a durable store (e.g. jsonlEventStore from @loopguard/checkpoint) or raise memoryEventStore({ maxFinishedRuns }) to keep logs to resume, approve or replay`,
    );
    this.runId = runId;
  }
}

/**
 * Reported once to `onError` by an agent created without a `store`: its runs live in memory
 * and none survives a restart of the process. Code `volatile_store`.
 */
export class VolatileStoreError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.VolatileStoreError";
  constructor(message: string) {
    super("volatile_store", message);
  }
}

/**
 * The model has no price and the caller gave none: loopguard never prices a model at zero.
 * Code `unknown_model_price`.
 */
export class UnknownModelPriceError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.UnknownModelPriceError";
  constructor(model: string, known: readonly string[]) {
    super(
      "unknown_model_price",
      `[core] no price is known for model "${model}" (known: ${known.join(", ")}); pass budget prices with createAgent({ prices: { "${model}": { inputPerMTok, outputPerMTok, ... } } })`,
    );
  }
}

/**
 * A tool handler signals a failure the model should hear about (no stack trace is sent).
 * Code `tool_error`; thrown by tools, read by the loop.
 */
export class ToolError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.ToolError";
  /** Whether retrying the same call could succeed (used only for idempotent tools). */
  readonly transient: boolean;
  constructor(message: string, options?: { transient?: boolean; cause?: unknown }) {
    super("tool_error", message, options);
    this.transient = options?.transient ?? false;
  }
}

/**
 * A model call failed in a way loopguard will not retry, or ran out of attempts; the run ends
 * `failed` with this message. Code `model_call_failed`.
 */
export class ModelCallError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.ModelCallError";
  /** The classification of the last failure (`rate_limit`, `bad_request`, `connection`, ...). */
  readonly kind: string;
  readonly status: number | undefined;
  readonly attempts: number;
  constructor(
    kind: string,
    status: number | undefined,
    attempts: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("model_call_failed", message, options);
    this.kind = kind;
    this.status = status;
    this.attempts = attempts;
  }
}

/** `agent.approve` was called on a run with no approval waiting. Code `no_pending_approval`. */
export class NoPendingApprovalError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.NoPendingApprovalError";
  readonly runId: string;
  constructor(runId: string, status: string) {
    super(
      "no_pending_approval",
      `[core] run ${runId} has no approval waiting (status ${status}); nothing to answer`,
    );
    this.runId = runId;
  }
}

/**
 * `agent.approve` could not tell which open approval the answer is for (several are open and
 * no `requestId` was given, or the given one is not open). Code `ambiguous_approval`.
 */
export class AmbiguousApprovalError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.AmbiguousApprovalError";
  readonly runId: string;
  /** The request ids that are open. */
  readonly open: readonly string[];
  constructor(runId: string, open: readonly string[], requestId: string | undefined) {
    super(
      "ambiguous_approval",
      `[core] run ${runId} has ${open.length} open approvals (${open.join(", ")}); pass requestId to say which one${requestId ? `: ${requestId} is not one of them` : ""}`,
    );
    this.runId = runId;
    this.open = open;
  }
}

/**
 * Spans an exporter never got: its queue was full, its breaker open (the collector refused its
 * last sends), or the agent shut down first. Reported to `onError`, never thrown into a run.
 * Code `export_dropped`.
 */
export class ExportDroppedError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.ExportDroppedError";
  /** Spans dropped since the last report. */
  readonly spanCount: number;
  /** Spans this exporter has dropped in all. */
  readonly totalDropped: number;
  constructor(spanCount: number, totalDropped: number, message: string) {
    super("export_dropped", message);
    this.spanCount = spanCount;
    this.totalDropped = totalDropped;
  }
}
