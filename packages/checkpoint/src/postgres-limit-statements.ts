/**
 * The statements of `postgresLimitStore`: take and refund (one upsert each), reserve, settle and
 * batch (one function call each), the operator's view (`inspect`) and the pruning of rows whose
 * time has passed.
 */
import type { BatchResult, LimitOperation, LimitOperationResult } from "@loopguard/core";
import { type PgPool, statementName } from "./postgres-pool.js";

/** One bucket as `postgresLimitStore.inspect()` reports it. */
export interface LimitBucketRow {
  key: string;
  /** Tokens in the bucket at `now` (refilled). */
  tokens: number;
  capacity: number;
  refillPerSecond: number;
  updatedAt: number;
}

/** One windowed counter as `postgresLimitStore.inspect()` reports it. */
export interface LimitCounterRow {
  key: string;
  windowStart: number;
  windowEnd: number;
  cap: number;
  /** What settled reservations really spent. */
  settled: number;
  /** Open reservations (held by runs in progress, or by a crashed worker until they expire). */
  reserved: number;
  /** How many reservations are open. */
  openReservations: number;
}

/** The prepared statements of one schema (`s` is the quoted schema). */
export function limitStatements(s: string, schema: string) {
  const bucketStatement = (what: "take" | "refund") => ({
    name: statementName(`limit_${what}`, schema),
    // $1 key, $2 capacity, $3 refill per second, $4 now, $5 count. The refill uses the row's
    // newest clock (greatest), so a worker whose clock lags never refills twice.
    text:
      what === "take"
        ? `INSERT INTO ${s}.limit_buckets AS b (key, tokens, updated_ms, capacity, refill_per_second, last_ok)
           VALUES ($1, CASE WHEN $5::float8 <= $2::float8 THEN $2::float8 - $5::float8 ELSE $2::float8 END, $4::bigint, $2::float8, $3::float8, $5::float8 <= $2::float8)
           ON CONFLICT (key) DO UPDATE SET
             tokens = CASE
               WHEN least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) >= $5::float8
               THEN least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) - $5::float8
               ELSE least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) END,
             last_ok = least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) >= $5::float8,
             updated_ms = greatest(b.updated_ms, $4::bigint),
             capacity = $2::float8,
             refill_per_second = $3::float8
           RETURNING tokens, last_ok`
        : `INSERT INTO ${s}.limit_buckets AS b (key, tokens, updated_ms, capacity, refill_per_second, last_ok)
           VALUES ($1, $2::float8, $4::bigint, $2::float8, $3::float8, true)
           ON CONFLICT (key) DO UPDATE SET
             tokens = least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8 + $5::float8),
             updated_ms = greatest(b.updated_ms, $4::bigint),
             capacity = $2::float8,
             refill_per_second = $3::float8
           RETURNING tokens, last_ok`,
  });
  const reserveStatement = {
    name: statementName("limit_reserve", schema),
    text: `SELECT ok, used FROM ${s}.lg_limit_reserve($1, $2::bigint, $3::bigint, $4::float8, $5::float8, $6, $7::bigint)`,
  };
  const settleStatement = {
    name: statementName("limit_settle", schema),
    text: `SELECT ${s}.lg_limit_settle($1, $2, $3::float8, $4::bigint)`,
  };
  return {
    take: bucketStatement("take"),
    refund: bucketStatement("refund"),
    reserve: reserveStatement,
    settle: settleStatement,
    batch: {
      name: statementName("limit_batch", schema),
      text: `SELECT ${s}.lg_limit_batch($1::jsonb, $2::bigint) AS result`,
    },
  };
}

/** An operation as the batch function reads it (flat, with the window's end computed). */
export function flatOperation(operation: LimitOperation): Record<string, unknown> {
  switch (operation.type) {
    case "take":
      return {
        type: "take",
        key: operation.key,
        capacity: operation.bucket.capacity,
        refill: operation.bucket.refillPerSecond,
        count: operation.count ?? 1,
      };
    case "reserve":
      return {
        type: "reserve",
        key: operation.key,
        start: Math.floor(operation.counter.windowStart),
        end: Math.floor(operation.counter.windowStart + operation.counter.windowMs),
        cap: operation.counter.cap,
        amount: operation.amount,
        id: operation.id,
      };
    default:
      return { type: "settle", key: operation.key, id: operation.id, actual: operation.actual };
  }
}

/** The batch function's answer as a `BatchResult` (a refused take says when to retry). */
export function batchResultOf(raw: unknown, operations: readonly LimitOperation[]): BatchResult {
  const answer = (typeof raw === "string" ? JSON.parse(raw) : raw) as {
    ok: boolean;
    results: Array<{ type: string; ok: boolean; remaining?: number; used?: number }>;
  };
  const results = operations.map((operation, index): LimitOperationResult => {
    const item = answer.results[index]!;
    if (operation.type === "take") {
      const remaining = clean(Number(item.remaining));
      const count = operation.count ?? 1;
      return {
        type: "take",
        ok: item.ok === true,
        remaining,
        retryAfterMs: item.ok
          ? 0
          : Math.ceil(clean(((count - remaining) / operation.bucket.refillPerSecond) * 1000)),
      };
    }
    if (operation.type === "reserve")
      return { type: "reserve", ok: item.ok === true, used: clean(Number(item.used)) };
    return { type: "settle", ok: true };
  });
  return { ok: answer.ok === true, results };
}

/** The buckets and live counters whose keys start with `prefix`, for `loopguard limits`. */
export async function inspectLimits(
  pool: PgPool,
  s: string,
  inspectOptions: { prefix?: string; now?: number; limit?: number },
): Promise<{ buckets: LimitBucketRow[]; counters: LimitCounterRow[] }> {
  const now = inspectOptions.now ?? Date.now();
  const prefix = inspectOptions.prefix ?? "";
  const limit = inspectOptions.limit ?? 200;
  const like = `${prefix.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
  const buckets = await pool.query(
    `SELECT key, least(capacity, tokens + greatest(0, $2::bigint - updated_ms) / 1000.0 * refill_per_second) AS tokens,
            capacity, refill_per_second, updated_ms
     FROM ${s}.limit_buckets WHERE key LIKE $1 ORDER BY key LIMIT $3`,
    [like, Math.floor(now), limit],
  );
  const counters = await pool.query(
    `SELECT c.key, c.window_start, c.window_end, c.cap, c.settled, c.reserved,
            (SELECT count(*) FROM ${s}.limit_reservations r WHERE r.key = c.key AND r.window_start = c.window_start) AS open
     FROM ${s}.limit_counters c WHERE c.key LIKE $1 AND c.window_end > $2::bigint
     ORDER BY c.key, c.window_start LIMIT $3`,
    [like, Math.floor(now), limit],
  );
  return {
    buckets: buckets.rows.map((row) => ({
      key: String(row.key),
      tokens: clean(Number(row.tokens)),
      capacity: Number(row.capacity),
      refillPerSecond: Number(row.refill_per_second),
      updatedAt: Number(row.updated_ms),
    })),
    counters: counters.rows.map((row) => ({
      key: String(row.key),
      windowStart: Number(row.window_start),
      windowEnd: Number(row.window_end),
      cap: Number(row.cap),
      settled: clean(Number(row.settled)),
      reserved: clean(Number(row.reserved)),
      openReservations: Number(row.open),
    })),
  };
}

/** Deletes counters and reservations whose window ended, and buckets full again. */
export async function pruneRows(pool: PgPool, s: string, now: number): Promise<number> {
  const { rows } = await pool.query(
    // SKIP LOCKED: a prune never waits on a row a take, reserve or settle holds (and so never
    // deadlocks with them); what it skips goes at the next prune.
    `WITH gone_reservations AS (
       DELETE FROM ${s}.limit_reservations WHERE ctid IN (
         SELECT ctid FROM ${s}.limit_reservations WHERE window_end <= $1::bigint FOR UPDATE SKIP LOCKED)
       RETURNING 1
     ), gone_counters AS (
       DELETE FROM ${s}.limit_counters WHERE ctid IN (
         SELECT ctid FROM ${s}.limit_counters WHERE window_end <= $1::bigint FOR UPDATE SKIP LOCKED)
       RETURNING 1
     ), gone_buckets AS (
       DELETE FROM ${s}.limit_buckets WHERE ctid IN (
         SELECT ctid FROM ${s}.limit_buckets
         WHERE tokens + greatest(0, $1::bigint - updated_ms) / 1000.0 * refill_per_second >= capacity
         FOR UPDATE SKIP LOCKED)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone_reservations) + (SELECT count(*) FROM gone_counters)
          + (SELECT count(*) FROM gone_buckets) AS n`,
    [Math.floor(now)],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Rounds away float noise below a billionth, so `0.1 + 0.2 - 0.3` reads as 0. */
export function clean(value: number): number {
  const rounded = Math.round(value * 1e9) / 1e9;
  return Object.is(rounded, -0) ? 0 : rounded;
}
