import { InvalidArgumentError } from "@loopguard/core";
import { migrate } from "./postgres-migrations.js";
import {
  openPool,
  type PgPool,
  type PostgresConnectionOptions,
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
  /** Reads the freeze; one indexed read of one row, not cached, so a freeze is seen at the next call. */
  status(): Promise<FreezeStatus>;
  /** Freezes every run on every worker sharing the database. */
  freeze(input: { reason: string; by?: string }): Promise<void>;
  /** Lifts the freeze. */
  unfreeze(options?: { by?: string }): Promise<void>;
  /** Ends the pool when the store opened it; safe to call twice. */
  close(): Promise<void>;
}

/** Options of `postgresFreezeStore`. */
export type PostgresFreezeStoreOptions = PostgresConnectionOptions;

/**
 * Creates the kill switch's store on PostgreSQL: one freeze halts every run on every worker
 * that shares the database, at its next tool call. The store fails closed only if its caller
 * does: a `status()` that rejects should be read as frozen.
 *
 * @example
 * const freezes = postgresFreezeStore({ connectionString: process.env.DATABASE_URL });
 * await freezes.freeze({ reason: "refunds misbehaving", by: "oncall@acme.com" });
 */
export function postgresFreezeStore(options: PostgresFreezeStoreOptions): PostgresFreezeStore {
  const where = "postgresFreezeStore";
  const { schema, quoted: s } = validateConnection(options, where);
  let opened: Promise<{ pool: PgPool; owned: boolean }> | undefined;
  let closed = false;
  const ready = async (): Promise<PgPool> => {
    if (closed)
      throw new InvalidArgumentError(
        `[checkpoint] the postgres freeze store (schema ${schema}) is closed; create a new one`,
      );
    opened ??= (async () => {
      const connection = await openPool(options, where);
      await migrate(connection.pool, schema, s);
      return connection;
    })();
    opened.catch(() => {
      opened = undefined;
    });
    return (await opened).pool;
  };
  return {
    name: "postgres",
    async status() {
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
      await pool.query(
        `INSERT INTO ${s}.freeze (id, frozen, reason, frozen_by, at) VALUES (true, true, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET frozen = true, reason = excluded.reason, frozen_by = excluded.frozen_by, at = excluded.at`,
        [input.reason, input.by ?? null, Date.now()],
      );
    },
    async unfreeze(unfreezeOptions = {}) {
      const pool = await ready();
      await pool.query(`UPDATE ${s}.freeze SET frozen = false, frozen_by = $2, at = $1 WHERE id`, [
        Date.now(),
        unfreezeOptions.by ?? null,
      ]);
    },
    async close() {
      if (closed) return;
      closed = true;
      const connection = await opened?.catch(() => undefined);
      opened = undefined;
      if (connection?.owned) await connection.pool.end();
    },
  };
}
