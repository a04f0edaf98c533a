/**
 * The LimitStore contract: atomic take-with-cap on named limits shared by every process that
 * uses the same store: token buckets (fleet rate limits) and windowed counters with reserve and
 * settle (tenant budgets).
 *
 * Failure rule: limits fail closed. A store that cannot answer (unreachable, timed out, a
 * broken row) rejects; the gate or budget that asked refuses the call or the step with a reason
 * the model can read, and the run is not lost. A store never admits on error. `take` and
 * `reserve` are atomic: concurrent callers on one key never both get the last token (no lost
 * updates), and one call is one round trip where the backend allows it.
 */

/** A token bucket: `capacity` tokens at most, refilled continuously at `refillPerSecond`. */
export interface BucketSpec {
  /** The largest burst; a positive integer. */
  capacity: number;
  /** Tokens added per second; positive, may be fractional (0.1 = one per 10 s). */
  refillPerSecond: number;
}

/** What a `take` found. */
export interface TakeResult {
  /** Whether the tokens were taken. */
  ok: boolean;
  /** Tokens left in the bucket after this take (or before, when refused). */
  remaining: number;
  /** When refused: how long until `count` tokens are there (ms); 0 when taken. */
  retryAfterMs: number;
}

/** A windowed counter: at most `cap` per window of `windowMs`, windows aligned to `windowStart`. */
export interface CounterSpec {
  /** The most the window may hold; a non-negative finite number. */
  cap: number;
  /** The window's start (epoch ms): counters of different windows are different counters. */
  windowStart: number;
  /** The window's length; the counter may be dropped once `windowStart + windowMs` has passed. */
  windowMs: number;
}

/** What a `reserve` found. */
export interface ReserveResult {
  /** Whether the amount was reserved (used + reserved + amount <= cap). */
  ok: boolean;
  /** Settled use plus open reservations in the window, after this reserve (or before, when refused). */
  used: number;
}

/** One operation of a `batch`. */
export type LimitOperation =
  | { type: "take"; key: string; bucket: BucketSpec; count?: number }
  | { type: "reserve"; key: string; counter: CounterSpec; amount: number; id: string }
  | { type: "settle"; key: string; id: string; actual: number };

/** What one operation of a `batch` found, in the order given. */
export type LimitOperationResult =
  | ({ type: "take" } & TakeResult)
  | ({ type: "reserve" } & ReserveResult)
  | { type: "settle"; ok: true };

/** What a `batch` did. */
export interface BatchResult {
  /** Whether every take and reserve was admitted (and so applied). */
  ok: boolean;
  /**
   * One result per operation, in the order given. When `ok` is false, no take or reserve was
   * applied, even those whose own `ok` is true (they were rolled back); settles always are.
   */
  results: LimitOperationResult[];
}

/** A limit store. */
export interface LimitStore {
  /** A name for diagnostics, e.g. `memory`, `postgres`. */
  readonly name: string;
  /**
   * Takes `count` tokens (default 1) from bucket `key` at time `now` if all of them are there;
   * takes nothing otherwise. A bucket first seen is full. The spec is the caller's: a bucket
   * read with a new spec is refilled under the new one.
   */
  take(
    key: string,
    bucket: BucketSpec,
    options: { now: number; count?: number },
  ): Promise<TakeResult>;
  /** Gives `count` tokens (default 1) back to bucket `key`, never above its capacity. */
  refund(key: string, bucket: BucketSpec, options: { now: number; count?: number }): Promise<void>;
  /**
   * Reserves `amount` on counter `key` under reservation `id` if it fits under the cap. The same
   * `id` reserved twice is one reservation (a retried call does not count twice).
   */
  reserve(
    key: string,
    counter: CounterSpec,
    amount: number,
    options: { id: string; now: number },
  ): Promise<ReserveResult>;
  /**
   * Settles reservation `id` at `actual` (what was really spent, more or less than reserved;
   * 0 releases it). Settling an unknown or settled id does nothing.
   */
  settle(key: string, id: string, actual: number, options: { now: number }): Promise<void>;
  /**
   * Optional: several operations in one round trip, e.g. a tool call's rate limits on a few
   * buckets, or the settle of one step and the reservation of the next. Settles are always
   * applied. Takes and reserves are all or nothing: when any is refused, none of them is
   * applied. Operations on one key apply in the order given. Callers without it fall back to
   * the single calls (`limitBatch` from `@loopguard/core/plugin` does both).
   */
  batch?(operations: readonly LimitOperation[], options: { now: number }): Promise<BatchResult>;
  /** Releases resources; safe to call twice. */
  close?(): Promise<void>;
}
