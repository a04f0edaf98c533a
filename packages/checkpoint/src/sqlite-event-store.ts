import type {
  AppendOptions,
  AppendResult,
  EventStore,
  ListFilter,
  RunLease,
  RunSummary,
  StoredEvent,
  StoredEventInput,
} from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { checkBatchSize } from "./batch-size.js";
import { type ChainSettings, chainSettings, type VerifyResult } from "./hash-chain.js";
import { encodeEventBody } from "./jsonl-log.js";
import { assertRunId } from "./run-id.js";
import { type PendingAppend, SqliteAppender } from "./sqlite-appender.js";
import { openSqliteConnection, type SqliteConnection } from "./sqlite-connection.js";
import type { SqliteDatabase } from "./sqlite-database.js";
import { SqliteGroupCommit } from "./sqlite-group-commit.js";
import { SqliteLogReader } from "./sqlite-log-reader.js";
import { SqliteRunLeases } from "./sqlite-run-leases.js";
import { SqliteThreadedCommit } from "./sqlite-threaded-commit.js";
import { SqliteWriterThread } from "./sqlite-writer-thread.js";
import { StoreClosedError } from "./store-errors.js";
import { validateFilter } from "./validate-filter.js";

export type { SqliteDatabase } from "./sqlite-database.js";

/** Options of `sqliteEventStore`: a database file, or a better-sqlite3 database you opened. */
export type SqliteEventStoreOptions =
  | {
      /** The database file (created with its directory if missing). */
      path: string;
      /** How long a write waits for another connection's lock. Default 5 000 ms. */
      busyTimeoutMs?: number;
      /** How long `acquireRun` waits for another resumer of the same run. Default 10 000 ms. */
      leaseTimeoutMs?: number;
      /** The key of the log's HMAC chain. Default: `LOOPGUARD_LOG_KEY`; without either, SHA-256. */
      logKey?: string | Buffer;
      /** Chains new events (default true). `false` only to measure what the chain costs. */
      hashChain?: boolean;
      /**
       * Commits on a writer thread (default true): each group commit's transaction and fsync
       * run in a `worker_threads` Worker with its own connection, so the event loop never waits
       * on the disk. `false` commits on the main thread (a `:memory:` database always does).
       */
      commitThread?: boolean;
    }
  | {
      /** A better-sqlite3 database you opened; the store never closes it. */
      database: SqliteDatabase;
      busyTimeoutMs?: number;
      leaseTimeoutMs?: number;
      logKey?: string | Buffer;
      hashChain?: boolean;
    };

/** The SQLite event store. */
export interface SqliteEventStore extends EventStore {
  readonly name: "sqlite";
  /**
   * Takes run `runId` for as long as the caller works on it (core calls it around a resume):
   * a row in `loopguard_leases` names this process until `release()`, so a second resumer gets
   * `RunLockedError` (after `leaseTimeoutMs`) before it executes anything. A holder that died
   * on this host is replaced.
   */
  acquireRun(runId: string): Promise<RunLease>;
  /**
   * Reads a run's log in order, `batchSize` events at a time (default 1 000), a page query
   * each, checking the chain as it goes, with a turn of the event loop between pages.
   */
  readBatches(runId: string, options?: { batchSize?: number }): AsyncIterable<StoredEvent[]>;
  /**
   * Checks a run's log end to end: every row's seq and JSON, the hash chain (each link, with
   * the key when one is set), and the head kept in the run's `loopguard_runs` row (a log cut
   * short). Never throws for a damaged log: the result names the first bad seq and why.
   */
  verify(runId: string): Promise<VerifyResult>;
  /** Closes the database if the store opened it; safe to call twice. */
  close(): Promise<void>;
}

/** The store's open connection and the concerns that work on it. */
interface Prepared extends SqliteConnection {
  /** Queues an append for the next group commit (on the writer thread, or on this thread). */
  commit: (append: PendingAppend) => void;
  /** Settles every queued append, then stops the writer thread if there is one. */
  finish: () => Promise<void>;
  leases: SqliteRunLeases;
  reader: SqliteLogReader;
}

/**
 * An EventStore in one SQLite database, on better-sqlite3 (an optional peer dependency,
 * loaded on first use). WAL mode and `synchronous=FULL`: `append` returns only after its
 * transaction was fsynced. The `expectedSeq` fence is checked inside a `BEGIN IMMEDIATE`
 * transaction, so it holds across connections and processes; summaries for `list` live in
 * the same transaction, in `loopguard_runs`. better-sqlite3 is synchronous, so appends are
 * group-committed: those made in one turn of the event loop share one transaction and one
 * fsync, and a turn's commit does a bounded amount of work, so thousands of concurrent runs
 * never hold the event loop for long.
 *
 * @example
 * const agent = createAgent({ model, tools, store: sqliteEventStore({ path: ".loopguard/runs.db" }) });
 */
export function sqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError(
      '[checkpoint] sqliteEventStore(options): pass { path: ".loopguard/runs.db" } or { database } (a better-sqlite3 Database)',
    );
  }
  const hasPath = "path" in options && options.path !== undefined;
  const hasDatabase = "database" in options && options.database !== undefined;
  if (hasPath === hasDatabase) {
    throw new InvalidArgumentError(
      "[checkpoint] sqliteEventStore(options): pass exactly one of path (a database file) and database (a better-sqlite3 Database)",
    );
  }
  if (
    hasPath &&
    (typeof (options as { path: unknown }).path !== "string" ||
      (options as { path: string }).path.trim() === "")
  ) {
    throw new InvalidArgumentError(
      '[checkpoint] sqliteEventStore(options): path must be a file path, or ":memory:"',
    );
  }
  if (hasDatabase) {
    const database = (options as { database: SqliteDatabase }).database;
    if (
      typeof database?.prepare !== "function" ||
      typeof database.transaction !== "function" ||
      typeof database.pragma !== "function"
    ) {
      throw new InvalidArgumentError(
        "[checkpoint] sqliteEventStore(options): database must be a better-sqlite3 Database",
      );
    }
  }
  const leaseTimeoutMs = options.leaseTimeoutMs ?? 10_000;
  if (!Number.isFinite(leaseTimeoutMs) || leaseTimeoutMs < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] sqliteEventStore: leaseTimeoutMs must be a non-negative number of milliseconds, got ${String(options.leaseTimeoutMs)}`,
    );
  }
  const chain: ChainSettings = chainSettings(options, "sqliteEventStore");
  const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] sqliteEventStore: busyTimeoutMs must be a non-negative integer, got ${String(options.busyTimeoutMs)}`,
    );
  }
  const commitThread = (options as { commitThread?: unknown }).commitThread ?? true;
  if (typeof commitThread !== "boolean") {
    throw new InvalidArgumentError(
      `[checkpoint] sqliteEventStore: commitThread must be true or false, got ${String(commitThread)}`,
    );
  }
  const path = hasPath ? (options as { path: string }).path : undefined;
  const threaded = commitThread && path !== undefined && path !== ":memory:";
  let ready: Promise<Prepared> | undefined;
  let closed = false;
  // The concerns, each its own module: the connection, append and commit (a transaction per
  // batch, batched by the group commit, on a writer thread or this one), leases (resumes), and
  // reading.
  const prepare = async (): Promise<Prepared> => {
    const connection = await openSqliteConnection(
      hasDatabase
        ? { database: (options as { database: SqliteDatabase }).database }
        : { path: (options as { path: string }).path },
      busyTimeoutMs,
    );
    return {
      ...connection,
      ...(threaded
        ? threadedCommits(connection, chain, busyTimeoutMs)
        : groupCommits(connection, chain)),
      leases: new SqliteRunLeases(connection),
      reader: new SqliteLogReader(connection, chain),
    };
  };
  const open = (): Promise<Prepared> => {
    if (closed) return Promise.reject(new StoreClosedError("sqliteEventStore"));
    ready ??= prepare().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };

  const self: SqliteEventStore = {
    name: "sqlite",

    async append(
      runId: string,
      events: readonly StoredEventInput[],
      appendOptions: AppendOptions,
    ): Promise<AppendResult> {
      assertRunId(runId, "sqliteEventStore.append");
      if (!Array.isArray(events))
        throw new InvalidArgumentError(
          `[checkpoint] append to run ${runId}: events must be an array`,
        );
      const expectedSeq = appendOptions?.expectedSeq;
      if (!Number.isSafeInteger(expectedSeq) || expectedSeq < 0) {
        throw new InvalidArgumentError(
          `[checkpoint] append to run ${runId}: options.expectedSeq must be the log's length (a non-negative integer), got ${String(expectedSeq)}`,
        );
      }
      const bodies = events.map((event, index) => encodeEventBody(event, runId, index));
      const store = await open();
      return new Promise<AppendResult>((resolve, reject) => {
        store.commit({ runId, expectedSeq, bodies, events, resolve, reject });
      });
    },

    async acquireRun(runId: string): Promise<RunLease> {
      assertRunId(runId, "sqliteEventStore.acquireRun");
      const store = await open();
      return store.leases.acquire(runId, leaseTimeoutMs, () => closed);
    },

    async *readBatches(runId: string, batchOptions: { batchSize?: number } = {}) {
      assertRunId(runId, "sqliteEventStore.readBatches");
      const batchSize = checkBatchSize(batchOptions.batchSize, "sqliteEventStore.readBatches");
      const store = await open();
      yield* store.reader.pages(runId, batchSize);
    },

    async verify(runId: string): Promise<VerifyResult> {
      const events = await self.read(runId).catch((error: unknown) => error);
      if (!Array.isArray(events)) {
        const seq = (events as { seq?: number }).seq ?? 0;
        return {
          ok: false,
          runId,
          firstBadSeq: seq,
          events: seq,
          reason: (events as Error).message,
        };
      }
      if (events.length === 0)
        return {
          ok: false,
          runId,
          firstBadSeq: 0,
          events: 0,
          reason: `no log: run ${runId} has no events`,
        };
      const store = await open();
      return store.reader.verifyRead(runId, events);
    },

    async read(runId: string): Promise<StoredEvent[]> {
      assertRunId(runId, "sqliteEventStore.read");
      const store = await open();
      return store.reader.read(runId);
    },

    async list(filter: ListFilter = {}): Promise<RunSummary[]> {
      validateFilter(filter);
      const store = await open();
      return store.reader.list(filter);
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      const store = await ready?.catch(() => undefined);
      // Appends already queued are committed before the database closes.
      if (store) await store.finish();
      if (store?.ownsDatabase && store.db.open) store.db.close();
    },
  };
  return self;
}

/** Commits on this thread: better-sqlite3's transaction, fsync included, runs on the event loop. */
function groupCommits(
  connection: SqliteConnection,
  chain: ChainSettings,
): Pick<Prepared, "commit" | "finish"> {
  const appender = new SqliteAppender(connection, chain);
  const commits = new SqliteGroupCommit();
  return {
    commit: (append) => commits.enqueue(appender, append),
    finish: async () => commits.drainAll(appender),
  };
}

/** Commits on a writer thread with its own connection to the database file. */
function threadedCommits(
  connection: SqliteConnection,
  chain: ChainSettings,
  busyTimeoutMs: number,
): Pick<Prepared, "commit" | "finish"> {
  const thread = new SqliteWriterThread(connection.db.name, connection.where, busyTimeoutMs);
  const commits = new SqliteThreadedCommit(connection, chain, thread);
  return {
    commit: (append) => commits.enqueue(append),
    finish: async () => {
      await commits.flush();
      await thread.close();
    },
  };
}
