/**
 * The connection side of the PostgreSQL store: the structural types of a `pg` pool (so the
 * public types never need `@types/pg`), the lazy import of the optional `pg` peer, and the
 * validation of schema names.
 */
import { InvalidArgumentError } from "@loopguard/core";
import { missingPeerError } from "./missing-peer-error.js";
import { PostgresStoreError } from "./postgres-errors.js";

/** The result of one query, as `pg` returns it. */
export interface PgQueryResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** A query with a name: `pg` prepares it once per connection and reuses the plan. */
export interface PgQueryConfig {
  /** The prepared statement's name (unique per text on a connection). */
  name?: string;
  text: string;
  values?: unknown[];
}

/** Anything that runs a parameterised query: a `pg` Pool or a checked-out client. */
export interface PgQueryable {
  query(text: string | PgQueryConfig, values?: unknown[]): Promise<PgQueryResult>;
}

/** A client checked out of a pool, for transactions. */
export interface PgClient extends PgQueryable {
  release(error?: Error | boolean): void;
}

/** A `pg` Pool (or anything shaped like one). */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgClient>;
  end(): Promise<void>;
  on?(event: "error", listener: (error: Error) => void): unknown;
  on?(event: "connect", listener: (client: PgEventEmitter) => void): unknown;
}

/** The event side of a `pg` client (a `pg.Client` is an EventEmitter). */
export interface PgEventEmitter {
  on?(event: "error", listener: (error: Error) => void): unknown;
  removeListener?(event: "error", listener: (error: Error) => void): unknown;
}

/** How a store or worker reaches PostgreSQL: a pool the caller owns, or a connection string. */
export interface PostgresConnectionOptions {
  /** A `pg` Pool; the caller keeps owning it (closing the store does not end it). */
  pool?: PgPool;
  /** A connection string; the store opens its own pool and ends it on `close()`. */
  connectionString?: string;
  /** The size of a pool opened from `connectionString`. Default 10. */
  max?: number;
  /** The schema the tables live in. Default `loopguard`. */
  schema?: string;
  /** Errors of idle pooled connections (they never break a run). */
  onError?: (error: unknown) => void;
}

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Checks a schema name: lower-case letters, digits and `_`, starting with a letter or `_`,
 * at most 63 characters (PostgreSQL's limit), and not a `pg_` name. Returns it quoted.
 */
export function quoteSchema(schema: unknown, where: string): string {
  if (typeof schema !== "string" || !identifier.test(schema) || schema.startsWith("pg_")) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: schema ${JSON.stringify(schema)} is not a valid schema name; use 1 to 63 lower-case letters, digits or "_", starting with a letter or "_" (and not "pg_")`,
    );
  }
  return `"${schema}"`;
}

/** Checks connection options and says which of `pool` and `connectionString` to pass. */
export function validateConnection(
  options: PostgresConnectionOptions | undefined,
  where: string,
): { schema: string; quoted: string } {
  if (!options || typeof options !== "object") {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pass an options object with a pool or a connectionString, e.g. ${where}({ connectionString: process.env.DATABASE_URL })`,
    );
  }
  const hasPool = options.pool !== undefined;
  const hasString = options.connectionString !== undefined;
  if (hasPool === hasString) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pass exactly one of pool (a pg.Pool) and connectionString (postgres://...)`,
    );
  }
  if (
    hasPool &&
    (typeof options.pool?.query !== "function" || typeof options.pool?.connect !== "function")
  ) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pool must be a pg.Pool (with query() and connect())`,
    );
  }
  if (
    hasString &&
    (typeof options.connectionString !== "string" ||
      !/^postgres(ql)?:\/\//.test(options.connectionString))
  ) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: connectionString must start with postgres:// or postgresql://`,
    );
  }
  if (options.max !== undefined && (!Number.isInteger(options.max) || options.max < 1)) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: max must be a positive integer, got ${JSON.stringify(options.max)}`,
    );
  }
  if (options.onError !== undefined && typeof options.onError !== "function") {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: onError must be a function (error) => void that reports idle connection errors, got ${typeof options.onError}`,
    );
  }
  const schema = options.schema ?? "loopguard";
  return { schema, quoted: quoteSchema(schema, where) };
}

/**
 * A prepared statement's name for one statement of one schema: `lg_<what>_<schema>`, or for a
 * long schema its first 40 characters and a hash, within PostgreSQL's 63-byte names (longer
 * names are cut there by the server, and two cut names could collide).
 */
export function statementName(what: string, schema: string): string {
  const plain = `lg_${what}_${schema}`;
  if (plain.length <= 63) return plain;
  let hash = 2166136261;
  for (let index = 0; index < schema.length; index += 1) {
    hash ^= schema.charCodeAt(index);
    hash = Math.imul(hash, 16777619) >>> 0;
  }
  return `lg_${what}_${schema.slice(0, 40)}_${hash.toString(36)}`;
}

/** Imports the optional `pg` peer, or says how to install it. */
export async function loadPg(
  where: string,
): Promise<{ Pool: new (config: Record<string, unknown>) => PgPool }> {
  try {
    const module = (await import("pg")) as unknown as {
      default?: { Pool: unknown };
      Pool?: unknown;
    };
    const Pool = (module.default?.Pool ?? module.Pool) as new (
      config: Record<string, unknown>,
    ) => PgPool;
    return { Pool };
  } catch (error) {
    throw missingPeerError("pg", where, error);
  }
}

/**
 * The error for a first use that could not reach the database: says where it tried and what to
 * do. Other errors are returned as they are.
 */
export function unreachableError(
  error: unknown,
  options: PostgresConnectionOptions,
  where: string,
): unknown {
  if (!isConnectionError(error)) return error;
  return new PostgresStoreError(
    `[checkpoint] ${where}: cannot reach PostgreSQL at ${describeTarget(options.connectionString)} (${(error as Error).message || (error as NodeJS.ErrnoException).code}): is the server running and the URL right? For the local test server run: eval "$(scripts/postgres.sh start)"`,
    { cause: error },
  );
}

/**
 * Opens the pool described by `options` (with `config` added to a pool it creates, such as
 * timeouts); `owned` says whether closing should end it.
 */
export async function openPool(
  options: PostgresConnectionOptions,
  where: string,
  config: Record<string, unknown> = {},
): Promise<{ pool: PgPool; owned: boolean }> {
  if (options.pool) {
    guardPool(options.pool, (error) => options.onError?.(error));
    return { pool: options.pool, owned: false };
  }
  const { Pool } = await loadPg(where);
  const pool = new Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    ...config,
  });
  guardPool(pool, (error) => options.onError?.(error));
  return { pool, owned: true };
}

/** A store's pool as `lazyPool` keeps it. */
export interface LazyPool {
  /** The pool, opened and prepared on first use; refused once closed. */
  ready(): Promise<PgPool>;
  /** Ends the pool when the store opened it; safe to call twice. */
  close(): Promise<void>;
}

/**
 * The pool of one PostgreSQL store (event, freeze or limit), shared by its calls: opened and
 * prepared (migrated) by the first call; a first use that failed (database down) is forgotten,
 * so it cannot poison the store and the next call tries again; after `close`, calls are refused
 * with a message naming the store.
 */
export function lazyPool(settings: {
  /** As in the closed message: "event", "freeze", "limit". */
  store: string;
  schema: string;
  open: () => Promise<{ pool: PgPool; owned: boolean }>;
  prepare: (pool: PgPool) => Promise<unknown>;
  /** What a failed `prepare` is rethrown as (default: as it is). */
  prepareError?: (error: unknown) => unknown;
}): LazyPool {
  let opened: Promise<{ pool: PgPool; owned: boolean }> | undefined;
  let closed = false;
  return {
    async ready() {
      if (closed)
        throw new InvalidArgumentError(
          `[checkpoint] the postgres ${settings.store} store (schema ${settings.schema}) is closed; create a new one`,
        );
      opened ??= (async () => {
        const connection = await settings.open();
        try {
          await settings.prepare(connection.pool);
        } catch (error) {
          if (connection.owned) await connection.pool.end().catch(() => undefined);
          throw settings.prepareError ? settings.prepareError(error) : error;
        }
        return connection;
      })();
      opened.catch(() => {
        opened = undefined;
      });
      return (await opened).pool;
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

const guarded = new WeakSet<object>();

/**
 * Gives a pool and every client it opens an `error` listener, once per pool. `pg` emits
 * `error` on a client whose connection dies (a server restart, a network cut); pg-pool listens
 * only while the client is idle in the pool, so a client checked out for a transaction, or a
 * pool nobody listens to, would crash the process with an uncaught `Connection terminated
 * unexpectedly`. With these listeners a lost connection only fails the queries on it.
 */
export function guardPool(pool: PgPool, report: (error: unknown) => void): void {
  if (guarded.has(pool) || typeof pool.on !== "function") return;
  guarded.add(pool);
  const onError = (error: Error) => {
    try {
      report(error);
    } catch {
      // A failing report hook must not turn a handled error into an uncaught one.
    }
  };
  pool.on("error", onError);
  // Clients opened before this call are guarded while checked out by `inTransaction` and
  // `connectGuarded`; every later client from the moment it connects.
  pool.on("connect", (client) => client.on?.("error", onError));
}

/**
 * Checks a client out of `pool` with an `error` listener for as long as it is out: a
 * connection lost meanwhile fails the client's queries, and `release()` (with no argument)
 * then discards the client instead of returning a dead one to the pool.
 */
export async function connectGuarded(pool: PgPool): Promise<PgClient> {
  const client = (await pool.connect()) as PgClient & PgEventEmitter;
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost ??= error;
  };
  client.on?.("error", onError);
  const release = client.release.bind(client);
  let released = false;
  return Object.assign(Object.create(client) as PgClient, {
    query: client.query.bind(client),
    release(error?: Error | boolean) {
      if (released) return;
      released = true;
      client.removeListener?.("error", onError);
      release(error || lost || false);
    },
  });
}

/** Whether `error` means PostgreSQL could not be reached or the connection was lost. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (
    code !== undefined &&
    [
      "ECONNREFUSED",
      "ECONNRESET",
      "ETIMEDOUT",
      "EPIPE",
      "ENOTFOUND",
      "EAI_AGAIN",
      "EHOSTUNREACH",
      "ENETUNREACH",
      // PostgreSQL's own: admin shutdown, crash shutdown, cannot connect now, too many clients.
      "57P01",
      "57P02",
      "57P03",
      "53300",
    ].includes(code)
  )
    return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable/i.test(
    error.message,
  );
}

/** Where a connection string points, without its password: `host:port/database`. */
export function describeTarget(connectionString: string | undefined): string {
  if (connectionString === undefined) return "the pool's database";
  try {
    const url = new URL(connectionString);
    return `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  } catch {
    return "the configured database";
  }
}

/**
 * Runs `work` in a transaction on one client; commits, or rolls back when it throws. `begin`
 * is the first round trip (plain `BEGIN`, or a simple query that starts with BEGIN and whose
 * last statement's rows are handed to `work`, to save a round trip).
 */
export async function inTransaction<T>(
  pool: PgPool,
  work: (client: PgClient, rows: PgQueryResult["rows"]) => Promise<T>,
  begin = "BEGIN",
): Promise<T> {
  const client = await connectGuarded(pool);
  let broken: Error | undefined;
  try {
    const results = (await client.query(begin)) as PgQueryResult | PgQueryResult[];
    const last = Array.isArray(results) ? results[results.length - 1] : results;
    const result = await work(client, last?.rows ?? []);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken ?? false);
  }
}
