/**
 * Errors of `@loopguard/core`. One base class with a `Symbol.for` brand, so `isInstance`
 * works across two copies of the package; one subclass per condition.
 */
const brand = Symbol.for("loopguard.error");

/** The base of every loopguard error. Messages start with the package, e.g. `[core]`. */
export class LoopguardError extends Error {
  readonly [brand] = true;
  /** A stable snake_case code. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    // One brand per class of the chain, so `AppendConflictError.isInstance` is true only for
    // conflicts while `LoopguardError.isInstance` is true for every loopguard error, even
    // when they come from two copies of the package.
    for (
      let type: unknown = new.target;
      typeof type === "function" && type !== Error;
      type = Object.getPrototypeOf(type)
    ) {
      (this as unknown as Record<symbol, boolean>)[
        Symbol.for(`loopguard.error.${(type as { name: string }).name}`)
      ] = true;
    }
  }

  /** Whether `value` is an error of this class (or a subclass), from any copy of the package. */
  static isInstance<T extends abstract new (...args: never[]) => LoopguardError>(
    this: T,
    value: unknown,
  ): value is InstanceType<T> {
    if (typeof value !== "object" || value === null) return false;
    const record = value as Record<symbol, unknown>;
    // Called unbound (e.g. passed as a callback), it checks for any loopguard error.
    const name = typeof this === "function" ? this.name : "LoopguardError";
    return record[brand] === true && record[Symbol.for(`loopguard.error.${name}`)] === true;
  }
}

/** A public entry point was given something it cannot use. */
export class InvalidArgumentError extends LoopguardError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid_argument", message, options);
  }
}

/** Another writer appended to the run first (the `expectedSeq` fence). */
export class AppendConflictError extends LoopguardError {
  readonly runId: string;
  readonly expectedSeq: number;
  readonly actualSeq: number;
  constructor(runId: string, expectedSeq: number, actualSeq: number) {
    super(
      "append_conflict",
      `[core] append to run ${runId} expected seq ${expectedSeq} but the log holds ${actualSeq} events: another writer advanced this run; reload it before writing again`,
    );
    this.runId = runId;
    this.expectedSeq = expectedSeq;
    this.actualSeq = actualSeq;
  }
}

/** A run's log cannot be folded back into a run. */
export class CorruptLogError extends LoopguardError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("corrupt_log", message, options);
  }
}

/** A run was asked for that the store does not hold. */
export class RunNotFoundError extends LoopguardError {
  readonly runId: string;
  constructor(runId: string, where: string) {
    super(
      "run_not_found",
      `[core] run ${runId} not found in ${where}; list runs with \`loopguard runs\``,
    );
    this.runId = runId;
  }
}

/** The model has no price and the caller gave none: loopguard never prices a model at zero. */
export class UnknownModelPriceError extends LoopguardError {
  constructor(model: string, known: readonly string[]) {
    super(
      "unknown_model_price",
      `[core] no price is known for model "${model}" (known: ${known.join(", ")}); pass budget prices with createAgent({ prices: { "${model}": { inputPerMTok, outputPerMTok, ... } } })`,
    );
  }
}

/** A tool handler signals a failure the model should hear about (no stack trace is sent). */
export class ToolError extends LoopguardError {
  /** Whether retrying the same call could succeed (used only for idempotent tools). */
  readonly transient: boolean;
  constructor(message: string, options?: { transient?: boolean; cause?: unknown }) {
    super("tool_error", message, options);
    this.transient = options?.transient ?? false;
  }
}

/** A model call failed in a way loopguard will not retry (or ran out of attempts). */
export class ModelCallError extends LoopguardError {
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
