import { InvalidArgumentError } from "@loopguard/core";
import { migrate } from "./postgres-migrations.js";
import {
  lazyPool,
  openPool,
  type PostgresConnectionOptions,
  unreachableError,
  validateConnection,
} from "./postgres-pool.js";

/** Whether the fleet is frozen, who froze it, why and when. */
export interface FreezeStatus {
  frozen: boolean;
  reason?: string;
  by?: string;
  /** Milliseconds since the epoch when the freeze was set. */
  at?: number;
}

/**
 * The kill switch's shared state on PostgreSQL: implements core's `FreezeStore` contract.
 */
export interface PostgresFreezeStore {
  readonly name: "postgres";
  /**
   * Reads the freeze: one indexed read of one row, reused for `cacheMs` (default 250 ms), so a
   * freeze set anywhere is seen by every call that starts more than `cacheMs` after it.
   */
  status(): Promise<FreezeStatus>;
  /** Freezes every run on every worker sharing the database. */
  freeze(input: { reason: string; by?: string }): Promise<void>;
  /** Lifts the freeze. */
  unfreeze(options?: { by?: string }): Promise<void>;
  /** Ends the pool when the store opened it; safe to call twice. */
  close(): Promise<void>;
}

/** Options of `postgresFreezeStore`. */
export interface PostgresFreezeStoreOptions extends PostgresConnectionOptions {
  /**
   * How long a read status is reused, in ms. Default 250; 0 reads the database on every call.
   * A freeze from any process halts every call that starts more than `cacheMs` after it
   * committed; this process's own `freeze()` and `unfreeze()` are seen at once.
   */
  cacheMs?: number;
  /** The clock (epoch ms) of the cache and of `at`. Default `Date.now`. */
  now?: () => number;
}

/**
 * Creates the kill switch's store on PostgreSQL: one freeze halts every run on every worker
 * that shares the database, at its first tool call that starts more than `cacheMs` (default
 * 250 ms) after the freeze. Reads are cached that long, so a busy worker asks the database at
 * most four times a second, not once per tool call. Errors are never cached; a `status()` that
 * rejects should be read as frozen (the kill switch does).
 *
 * @example
 * const freezes = postgresFreezeStore({ connectionString: process.env.DATABASE_URL });
 * const gate = killSwitch({ store: freezes }); // from @loopguard/policy
 * await freezes.freeze({ reason: "refunds misbehaving", by: "oncall@acme.com" });
 */
export function postgresFreezeStore(options: PostgresFreezeStoreOptions): PostgresFreezeStore {
  const where = "postgresFreezeStore";
  const { schema, quoted: s } = validateConnection(options, where);
  const cacheMs = options.cacheMs ?? 250;
  if (typeof cacheMs !== "number" || !Number.isFinite(cacheMs) || cacheMs < 0)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: cacheMs must be a number of milliseconds >= 0 (0 reads on every call), got ${String(cacheMs)}`,
    );
  if (options.now !== undefined && typeof options.now !== "function")
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: now must be a function returning epoch milliseconds`,
    );
  const now = options.now ?? Date.now;
  // The status and when the read that produced it was sent: a read sent at t sees every
  // freeze committed before t, so it may stand in for any call until t + cacheMs.
  let cached: { status: FreezeStatus; sentAt: number } | undefined;
  let inFlight: { promise: Promise<FreezeStatus>; sentAt: number } | undefined;
  const { ready, close } = lazyPool({
    store: "freeze",
    schema,
    open: () => openPool(options, where),
    prepare: (pool) => migrate(pool, schema, s),
    prepareError: (error) => unreachableError(error, options, where),
  });
  const read = async (): Promise<FreezeStatus> => {
    const pool = await ready();
    const { rows } = await pool.query(
      `SELECT frozen, reason, frozen_by, at FROM ${s}.freeze WHERE id`,
    );
    const row = rows[0];
    if (row?.frozen !== true) return { frozen: false };
    return {
      frozen: true,
      ...(typeof row.reason === "string" ? { reason: row.reason } : {}),
      ...(typeof row.frozen_by === "string" ? { by: row.frozen_by } : {}),
      at: Number(row.at),
    };
  };
  return {
    name: "postgres",
    status() {
      const calledAt = now();
      if (cached && calledAt - cached.sentAt <= cacheMs)
        return Promise.resolve({ ...cached.status });
      // Calls at once share one read, unless it was sent too long ago to stand for this call.
      if (inFlight && calledAt - inFlight.sentAt <= cacheMs)
        return inFlight.promise.then((status) => ({ ...status }));
      const sentAt = calledAt;
      const promise = read().then((status) => {
        if (!cached || cached.sentAt <= sentAt) cached = { status, sentAt };
        return status;
      });
      const current = { promise, sentAt };
      inFlight = current;
      // Errors are never cached: the kill switch fails closed and the next call reads again.
      const clear = () => {
        if (inFlight === current) inFlight = undefined;
      };
      promise.then(clear, clear);
      return promise.then((status) => ({ ...status }));
    },
    async freeze(input) {
      if (!input || typeof input.reason !== "string" || input.reason.trim() === "") {
        throw new InvalidArgumentError(
          "[checkpoint] postgresFreezeStore.freeze({ reason, by }): reason must be a non-empty string saying why the fleet is frozen",
        );
      }
      if (input.by !== undefined && typeof input.by !== "string")
        throw new InvalidArgumentError(
          "[checkpoint] postgresFreezeStore.freeze: by must be a string (who froze it)",
        );
      const pool = await ready();
      const at = now();
      await pool.query(
        `INSERT INTO ${s}.freeze (id, frozen, reason, frozen_by, at) VALUES (true, true, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET frozen = true, reason = excluded.reason, frozen_by = excluded.frozen_by, at = excluded.at`,
        [input.reason, input.by ?? null, at],
      );
      cached = {
        status: {
          frozen: true,
          reason: input.reason,
          ...(input.by !== undefined ? { by: input.by } : {}),
          at,
        },
        sentAt: now(),
      };
      inFlight = undefined;
    },
    async unfreeze(unfreezeOptions = {}) {
      if (
        unfreezeOptions === null ||
        typeof unfreezeOptions !== "object" ||
        (unfreezeOptions.by !== undefined && typeof unfreezeOptions.by !== "string")
      )
        throw new InvalidArgumentError(
          "[checkpoint] postgresFreezeStore.unfreeze({ by }): by must be a string (who lifted the freeze)",
        );
      const pool = await ready();
      await pool.query(`UPDATE ${s}.freeze SET frozen = false, frozen_by = $2, at = $1 WHERE id`, [
        now(),
        unfreezeOptions.by ?? null,
      ]);
      cached = { status: { frozen: false }, sentAt: now() };
      inFlight = undefined;
    },
    close,
  };
}
