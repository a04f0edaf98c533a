/**
 * The tables and PL/pgSQL functions of `postgresLimitStore`: token buckets, windowed counters
 * with their reservations, and the functions that reserve, settle and run a batch in one call.
 */
import type { PgPool } from "./postgres-pool.js";

/** The version of the limit tables and functions this package writes. */
export const limitSchemaVersion = 3;

/**
 * Creates the limit tables and functions in `schema` if they are missing, under an advisory
 * lock so many workers starting at once do it once. Apart from the event store's migrations:
 * a limit store may live in a database of its own.
 */
export async function migrateLimits(pool: PgPool, schema: string, s: string): Promise<void> {
  // Up to date already (the common case: a worker joining a running fleet): nothing to lock.
  // DDL such as CREATE INDEX IF NOT EXISTS takes its table lock before it finds the index
  // there, and would queue behind (and deadlock with) the fleet's reserves and settles.
  try {
    const { rows } = await pool.query(`SELECT version FROM ${s}.limit_meta`);
    if (Number(rows[0]?.version) >= limitSchemaVersion) return;
  } catch (error) {
    if (
      (error as { code?: string }).code !== "42P01" &&
      (error as { code?: string }).code !== "3F000"
    )
      throw error;
  }
  const statements = [...tableStatements(s), ...functionStatements(s), batchFunction(s)];
  statements.push(
    `CREATE TABLE IF NOT EXISTS ${s}.limit_meta (id boolean PRIMARY KEY DEFAULT true CHECK (id), version integer NOT NULL)`,
    `INSERT INTO ${s}.limit_meta (id, version) VALUES (true, ${limitSchemaVersion})
     ON CONFLICT (id) DO UPDATE SET version = greatest(${s}.limit_meta.version, excluded.version)`,
  );
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  (client as unknown as { on?: (event: string, listener: (error: Error) => void) => void }).on?.(
    "error",
    onError,
  );
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `loopguard:limits:${schema}`,
    ]);
    for (const statement of statements) await client.query(statement);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch((rollbackError: Error) => {
      broken ??= rollbackError;
    });
    throw error;
  } finally {
    (
      client as unknown as {
        removeListener?: (event: string, listener: (error: Error) => void) => void;
      }
    ).removeListener?.("error", onError);
    client.release(broken ?? false);
  }
}

/** The tables and their indexes. */
function tableStatements(s: string): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    `CREATE TABLE IF NOT EXISTS ${s}.limit_buckets (
       key text PRIMARY KEY,
       tokens float8 NOT NULL,
       updated_ms bigint NOT NULL,
       capacity float8 NOT NULL,
       refill_per_second float8 NOT NULL,
       last_ok boolean NOT NULL
     )`,
    `CREATE TABLE IF NOT EXISTS ${s}.limit_counters (
       key text NOT NULL,
       window_start bigint NOT NULL,
       window_end bigint NOT NULL,
       cap float8 NOT NULL,
       settled float8 NOT NULL DEFAULT 0,
       reserved float8 NOT NULL DEFAULT 0,
       PRIMARY KEY (key, window_start)
     )`,
    `CREATE INDEX IF NOT EXISTS limit_counters_end_idx ON ${s}.limit_counters (window_end)`,
    `CREATE TABLE IF NOT EXISTS ${s}.limit_reservations (
       key text NOT NULL,
       id text NOT NULL,
       window_start bigint NOT NULL,
       window_end bigint NOT NULL,
       amount float8 NOT NULL,
       reserved_ms bigint NOT NULL,
       PRIMARY KEY (key, id)
     )`,
    `CREATE INDEX IF NOT EXISTS limit_reservations_end_idx ON ${s}.limit_reservations (window_end)`,
  ];
}

/** reserve and settle: one function call each. */
function functionStatements(s: string): string[] {
  return [
    // reserve: lock the counter row (creating it), then decide with the latest committed
    // reservations (each statement of a function reads a fresh snapshot under READ COMMITTED).
    `CREATE OR REPLACE FUNCTION ${s}.lg_limit_reserve(
       p_key text, p_start bigint, p_end bigint, p_cap float8, p_amount float8, p_id text, p_now bigint
     ) RETURNS TABLE (ok boolean, used float8) LANGUAGE plpgsql AS $fn$
     DECLARE
       c_settled float8;
       c_reserved float8;
       r_amount float8;
       r_start bigint;
     BEGIN
       INSERT INTO ${s}.limit_counters AS c (key, window_start, window_end, cap)
         VALUES (p_key, p_start, p_end, p_cap)
         ON CONFLICT (key, window_start) DO UPDATE SET cap = excluded.cap, window_end = excluded.window_end
         RETURNING c.settled, c.reserved INTO c_settled, c_reserved;
       SELECT r.amount, r.window_start INTO r_amount, r_start
         FROM ${s}.limit_reservations r WHERE r.key = p_key AND r.id = p_id;
       IF FOUND THEN
         -- The same id again (a retried or taken-over step) is one reservation. Asked for more
         -- than it holds (another worker's max_tokens), it grows to that if it fits, else is
         -- refused: what it holds must cover what the step may now spend.
         IF p_amount <= r_amount OR r_start <> p_start THEN
           RETURN QUERY SELECT true, c_settled + c_reserved;
           RETURN;
         END IF;
         IF c_settled + c_reserved - r_amount + p_amount > p_cap THEN
           RETURN QUERY SELECT false, c_settled + c_reserved;
           RETURN;
         END IF;
         UPDATE ${s}.limit_reservations SET amount = p_amount WHERE key = p_key AND id = p_id;
         UPDATE ${s}.limit_counters SET reserved = reserved - r_amount + p_amount
           WHERE key = p_key AND window_start = p_start;
         RETURN QUERY SELECT true, c_settled + c_reserved - r_amount + p_amount;
         RETURN;
       END IF;
       IF c_settled + c_reserved + p_amount > p_cap THEN
         RETURN QUERY SELECT false, c_settled + c_reserved;
         RETURN;
       END IF;
       INSERT INTO ${s}.limit_reservations (key, id, window_start, window_end, amount, reserved_ms)
         VALUES (p_key, p_id, p_start, p_end, p_amount, p_now);
       UPDATE ${s}.limit_counters SET reserved = reserved + p_amount
         WHERE key = p_key AND window_start = p_start;
       RETURN QUERY SELECT true, c_settled + c_reserved + p_amount;
     END
     $fn$`,
    // settle: the reservation goes, its counter trades the reserved amount for the actual one.
    `CREATE OR REPLACE FUNCTION ${s}.lg_limit_settle(p_key text, p_id text, p_actual float8, p_now bigint)
     RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       r_start bigint;
       r_amount float8;
     BEGIN
       -- Lock the counter before the reservation, in the order reserve takes them (else two
       -- calls on one counter can deadlock).
       SELECT window_start INTO r_start FROM ${s}.limit_reservations WHERE key = p_key AND id = p_id;
       IF NOT FOUND THEN RETURN; END IF;
       PERFORM 1 FROM ${s}.limit_counters WHERE key = p_key AND window_start = r_start FOR UPDATE;
       DELETE FROM ${s}.limit_reservations WHERE key = p_key AND id = p_id
         RETURNING amount INTO r_amount;
       IF NOT FOUND THEN RETURN; END IF;
       UPDATE ${s}.limit_counters
         SET reserved = greatest(0, reserved - r_amount), settled = settled + p_actual
         WHERE key = p_key AND window_start = r_start;
     END
     $fn$`,
  ];
}

/** batch: many operations in one call. */
function batchFunction(s: string): string {
  // batch: every operation, locking rows in key order (so two batches never deadlock); takes
  // and reserves all or nothing (a refusal rolls the block back to its start, then the settles
  // are applied again), settles always. Operations on one key keep the caller's order.
  return `CREATE OR REPLACE FUNCTION ${s}.lg_limit_batch(p_ops jsonb, p_now bigint)
   RETURNS jsonb LANGUAGE plpgsql AS $fn$
   DECLARE
     op record;
     results jsonb[] := array_fill(NULL::jsonb, ARRAY[jsonb_array_length(p_ops)]);
     refused boolean := false;
     r record;
     v_tokens float8;
     v_ok boolean;
   BEGIN
     BEGIN
       FOR op IN SELECT value AS o, ordinality AS i FROM jsonb_array_elements(p_ops) WITH ORDINALITY
                 ORDER BY value->>'key', ordinality LOOP
         IF op.o->>'type' = 'take' THEN
           INSERT INTO ${s}.limit_buckets AS b (key, tokens, updated_ms, capacity, refill_per_second, last_ok)
             VALUES (op.o->>'key',
                     CASE WHEN (op.o->>'count')::float8 <= (op.o->>'capacity')::float8
                          THEN (op.o->>'capacity')::float8 - (op.o->>'count')::float8
                          ELSE (op.o->>'capacity')::float8 END,
                     p_now, (op.o->>'capacity')::float8, (op.o->>'refill')::float8,
                     (op.o->>'count')::float8 <= (op.o->>'capacity')::float8)
             ON CONFLICT (key) DO UPDATE SET
               tokens = CASE
                 WHEN least(excluded.capacity, b.tokens + greatest(0, p_now - b.updated_ms) / 1000.0 * excluded.refill_per_second) >= (op.o->>'count')::float8
                 THEN least(excluded.capacity, b.tokens + greatest(0, p_now - b.updated_ms) / 1000.0 * excluded.refill_per_second) - (op.o->>'count')::float8
                 ELSE least(excluded.capacity, b.tokens + greatest(0, p_now - b.updated_ms) / 1000.0 * excluded.refill_per_second) END,
               last_ok = least(excluded.capacity, b.tokens + greatest(0, p_now - b.updated_ms) / 1000.0 * excluded.refill_per_second) >= (op.o->>'count')::float8,
               updated_ms = greatest(b.updated_ms, p_now),
               capacity = excluded.capacity,
               refill_per_second = excluded.refill_per_second
             RETURNING b.tokens, b.last_ok INTO v_tokens, v_ok;
           results[op.i] := jsonb_build_object('type', 'take', 'ok', v_ok, 'remaining', v_tokens);
           IF NOT v_ok THEN refused := true; END IF;
         ELSIF op.o->>'type' = 'reserve' THEN
           SELECT * INTO r FROM ${s}.lg_limit_reserve(op.o->>'key', (op.o->>'start')::bigint,
             (op.o->>'end')::bigint, (op.o->>'cap')::float8, (op.o->>'amount')::float8, op.o->>'id', p_now);
           results[op.i] := jsonb_build_object('type', 'reserve', 'ok', r.ok, 'used', r.used);
           IF NOT r.ok THEN refused := true; END IF;
         ELSE
           PERFORM ${s}.lg_limit_settle(op.o->>'key', op.o->>'id', (op.o->>'actual')::float8, p_now);
           results[op.i] := jsonb_build_object('type', 'settle', 'ok', true);
         END IF;
       END LOOP;
       IF refused THEN RAISE EXCEPTION 'limit batch refused' USING ERRCODE = 'LG001'; END IF;
     EXCEPTION WHEN SQLSTATE 'LG001' THEN
       FOR op IN SELECT value AS o FROM jsonb_array_elements(p_ops) WITH ORDINALITY
                 WHERE value->>'type' = 'settle' ORDER BY value->>'key', ordinality LOOP
         PERFORM ${s}.lg_limit_settle(op.o->>'key', op.o->>'id', (op.o->>'actual')::float8, p_now);
       END LOOP;
     END;
     RETURN jsonb_build_object('ok', NOT refused, 'results', to_jsonb(results));
   END
   $fn$`;
}
