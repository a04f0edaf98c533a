import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
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
import { AppendConflictError, CorruptLogError, InvalidArgumentError } from "@loopguard/core";
import { filterSummaries, summarize } from "@loopguard/core/plugin";
import type BetterSqlite3 from "better-sqlite3";
import { checkBatchSize } from "./batch-size.js";
import { holderIsGone, markHeld, newHolder } from "./file-lock.js";
import {
  advance,
  type ChainSettings,
  chainSettings,
  chainStart,
  genesis,
  link,
  runRowMismatch,
  type VerifyResult,
  verifiedLog,
} from "./hash-chain.js";
import { encodeEventBody, lineOf } from "./jsonl-log.js";
import { assertRunId } from "./run-id.js";
import { loadSqliteDriver } from "./sqlite-driver.js";
import { RunLockedError, StoreClosedError, StoreWriteError } from "./store-errors.js";
import { validateFilter } from "./validate-filter.js";

/** The part of a better-sqlite3 `Database` the store uses (so these types need no `@types` package). */
export interface SqliteDatabase {
  readonly name: string;
  readonly open: boolean;
  prepare(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  exec(source: string): unknown;
  transaction(fn: (...args: never[]) => unknown): unknown;
  close(): unknown;
}

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

interface Prepared {
  db: BetterSqlite3.Database;
  ownsDatabase: boolean;
  where: string;
  /** Commits a batch of appends in one transaction; each settles on its own (a conflict fails only itself). */
  commit: (batch: PendingAppend[]) => void;
  readRows: BetterSqlite3.Statement<[string], { seq: number; body: string; chain: string | null }>;
  readPage: BetterSqlite3.Statement<
    [string, number, number],
    { seq: number; body: string; chain: string | null }
  >;
  /** The run's row: its summary and the chain value of its last event. */
  runRow: BetterSqlite3.Statement<[string], { summary: string; head: string | null }>;
  /** Takes a run's lease for `holder` unless a live holder has it (then returns that holder). */
  takeLease: (runId: string, holder: string) => { taken: true } | { taken: false; holder: string };
  releaseLease: (runId: string, holder: string) => void;
}

/**
 * One row of a run's log as an event, checked: its place (no gap), its JSON, and its link in
 * the hash chain (`cursor` moves on). Throws `CorruptLogError` with the position (`seq`).
 */
function parseRow(
  store: { where: string },
  runId: string,
  row: { seq: number; body: string; chain: string | null },
  index: number,
  cursor: ReturnType<typeof chainStart>,
): StoredEvent {
  const fail = (what: string, cause?: unknown): never => {
    const error = new CorruptLogError(
      `[checkpoint] ${store.where}: run ${runId} event ${row.seq} (table loopguard_events): ${what}; loopguard never skips a damaged event: restore the database from a backup or repair the row by hand`,
      cause === undefined ? undefined : { cause },
    );
    // The position of the first bad event, for verify.
    throw Object.assign(error, { seq: index });
  };
  if (row.seq !== index) fail(`expected event ${index} here: the log has a gap`);
  let event: unknown;
  try {
    event = JSON.parse(row.body);
  } catch (error) {
    fail(`the stored body is not valid JSON (${(error as Error).message})`, error);
  }
  if (typeof event !== "object" || event === null || Array.isArray(event))
    return fail("the stored body is not a JSON object");
  const record = event as Record<string, unknown>;
  if (record.seq !== row.seq || typeof record.type !== "string" || typeof record.at !== "number")
    return fail("the stored body is not an event with this seq, a string type and a number at");
  const broken = advance(cursor, row.body, row.chain ?? undefined);
  if (broken) fail(broken);
  return record as unknown as StoredEvent;
}

/** An append waiting for the next group commit. */
interface PendingAppend {
  runId: string;
  expectedSeq: number;
  bodies: string[];
  events: readonly StoredEventInput[];
  /** Set inside the transaction: the log's length after it, or why it was refused. */
  outcome?: { nextSeq: number } | { error: unknown };
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

/**
 * How long one group commit may keep the event loop, in ms, before it commits what it has
 * and lets other work run (the rest waits for the next turn).
 */
const commitBudgetMs = 8;

const schema = `
CREATE TABLE IF NOT EXISTS loopguard_events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at REAL NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS loopguard_runs (
  run_id TEXT PRIMARY KEY,
  agent_id TEXT,
  status TEXT NOT NULL,
  updated_at REAL NOT NULL,
  summary TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS loopguard_runs_by_update ON loopguard_runs (updated_at DESC, run_id);
CREATE TABLE IF NOT EXISTS loopguard_leases (
  run_id TEXT PRIMARY KEY,
  holder TEXT NOT NULL
) WITHOUT ROWID;
`;

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
  let ready: Promise<Prepared> | undefined;
  let closed = false;

  const prepare = async (): Promise<Prepared> => {
    let db: BetterSqlite3.Database;
    let ownsDatabase = false;
    if (hasDatabase) {
      db = (options as { database: SqliteDatabase }).database as unknown as BetterSqlite3.Database;
    } else {
      const Database = await loadSqliteDriver();
      const path = (options as { path: string }).path;
      const file = path === ":memory:" ? path : resolve(path);
      if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
      db = new Database(file);
      ownsDatabase = true;
    }
    const where = db.name;
    try {
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = FULL");
      db.exec(schema);
      // The hash chain's columns, added to databases made before them.
      for (const [table, column] of [
        ["loopguard_events", "chain"],
        ["loopguard_runs", "head"],
      ] as const) {
        const columns = db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>;
        if (columns.some((row) => row.name === column)) continue;
        try {
          db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT`);
        } catch (error) {
          // Another connection added it meanwhile.
          if (!/duplicate column/i.test((error as Error).message)) throw error;
        }
      }
    } catch (error) {
      if (ownsDatabase) db.close();
      throw error;
    }
    const nextSeqOf = db.prepare<[string], { next: number }>(
      "SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM loopguard_events WHERE run_id = ?",
    );
    const insert = db.prepare<[string, number, number, string, string, string | null]>(
      "INSERT INTO loopguard_events (run_id, seq, at, type, body, chain) VALUES (?, ?, ?, ?, ?, ?)",
    );
    const chainAt = db.prepare<[string, number], { chain: string | null }>(
      "SELECT chain FROM loopguard_events WHERE run_id = ? AND seq = ?",
    );
    const summaryOf = db.prepare<[string], { summary: string }>(
      "SELECT summary FROM loopguard_runs WHERE run_id = ?",
    );
    const upsert = db.prepare<[string, string | null, string, number, string, string | null]>(
      "INSERT INTO loopguard_runs (run_id, agent_id, status, updated_at, summary, head) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET agent_id = excluded.agent_id, status = excluded.status, updated_at = excluded.updated_at, summary = excluded.summary, head = excluded.head",
    );
    // Summaries and chain heads this connection wrote last, by run (checked against the log's
    // length before use, so another connection's appends are never missed).
    const summaries = new Map<
      string,
      { nextSeq: number; summary: RunSummary; head: string | undefined }
    >();
    const appendOne = (append: PendingAppend, lengths: Map<string, number>) => {
      const { runId, expectedSeq, bodies, events } = append;
      const length = lengths.get(runId) ?? nextSeqOf.get(runId)!.next;
      if (expectedSeq !== length) {
        append.outcome = { error: new AppendConflictError(runId, expectedSeq, length) };
        lengths.set(runId, length);
        return;
      }
      if (bodies.length === 0) {
        append.outcome = { nextSeq: length };
        lengths.set(runId, length);
        return;
      }
      const cached = summaries.get(runId);
      // The chain continues from the last event's link (none: the log predates the chain).
      let head: string | undefined;
      if (length === 0) head = chain.enabled ? genesis(runId) : undefined;
      else if (cached?.nextSeq === length) head = cached.head;
      else head = chainAt.get(runId, length - 1)?.chain ?? undefined;
      if (head?.startsWith("hmac:") && !chain.key) {
        append.outcome = {
          error: new StoreWriteError(
            `[checkpoint] run ${runId} in ${where} is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
          ),
        };
        lengths.set(runId, length);
        return;
      }
      const stored: StoredEvent[] = [];
      for (let index = 0; index < bodies.length; index += 1) {
        const event = events[index]!;
        const text = lineOf(length + index, bodies[index]!).slice(0, -1);
        if (head !== undefined) head = link(head, text, chain.key);
        insert.run(runId, length + index, event.at, event.type, text, head ?? null);
        stored.push({ ...event, seq: length + index } as StoredEvent);
      }
      let previous: RunSummary | undefined;
      if (cached?.nextSeq === length) previous = cached.summary;
      else if (length > 0) {
        const row = summaryOf.get(runId);
        previous = row ? (JSON.parse(row.summary) as RunSummary) : undefined;
      }
      const summary = summarize(previous, runId, stored);
      upsert.run(
        runId,
        summary.agentId ?? null,
        summary.status,
        summary.updatedAt,
        JSON.stringify(summary),
        head ?? null,
      );
      const nextSeq = length + bodies.length;
      lengths.set(runId, nextSeq);
      append.outcome = { nextSeq };
      summaries.delete(runId);
      summaries.set(runId, { nextSeq, summary, head });
      if (summaries.size > 10_000) summaries.delete(summaries.keys().next().value as string);
    };
    const leaseOf = db.prepare<[string], { holder: string }>(
      "SELECT holder FROM loopguard_leases WHERE run_id = ?",
    );
    const putLease = db.prepare<[string, string]>(
      "INSERT INTO loopguard_leases (run_id, holder) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder",
    );
    const dropLease = db.prepare<[string, string]>(
      "DELETE FROM loopguard_leases WHERE run_id = ? AND holder = ?",
    );
    const takeLeaseInTransaction = db.transaction((runId: string, holder: string) => {
      const current = leaseOf.get(runId)?.holder;
      if (current !== undefined) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(current);
        } catch {
          parsed = undefined;
        }
        if (!holderIsGone(parsed)) return { taken: false as const, holder: current };
      }
      putLease.run(runId, holder);
      return { taken: true as const };
    });
    const commitInTransaction = db.transaction((batch: PendingAppend[]) => {
      const lengths = new Map<string, number>();
      for (const append of batch) appendOne(append, lengths);
    });
    return {
      db,
      ownsDatabase,
      where,
      // BEGIN IMMEDIATE: the write lock is taken before any fence is read, so two writers
      // cannot both see the same length. One transaction, so one fsync, for the whole batch.
      commit: (batch) => {
        try {
          commitInTransaction.immediate(batch);
        } catch (error) {
          // Rolled back: none of the batch is in the log, and the cached summaries may be ahead.
          summaries.clear();
          for (const append of batch) append.outcome = { error };
          throw error;
        }
      },
      readRows: db.prepare<[string], { seq: number; body: string; chain: string | null }>(
        "SELECT seq, body, chain FROM loopguard_events WHERE run_id = ? ORDER BY seq",
      ),
      readPage: db.prepare<
        [string, number, number],
        { seq: number; body: string; chain: string | null }
      >(
        "SELECT seq, body, chain FROM loopguard_events WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
      ),
      runRow: db.prepare<[string], { summary: string; head: string | null }>(
        "SELECT summary, head FROM loopguard_runs WHERE run_id = ?",
      ),
      takeLease: (runId, holder) => takeLeaseInTransaction.immediate(runId, holder),
      releaseLease: (runId, holder) => {
        dropLease.run(runId, holder);
      },
    };
  };

  /**
   * Group commit: appends from every run wait for the next turn of the event loop and are
   * committed together, one transaction (one fsync) per turn, each turn at most
   * `commitBudgetMs` of work, so ten thousand runs appending at once never hold the event
   * loop for long (better-sqlite3 is synchronous: without this, each append's commit, fsync
   * included, ran back to back in one stretch of microtasks).
   */
  let queue: PendingAppend[] = [];
  let scheduled = false;
  const schedule = (store: Prepared) => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      drain(store);
    });
  };
  /** Milliseconds one append costs inside a commit (a moving average), to size the next batch. */
  let perAppendMs = 0.05;
  const drain = (store: Prepared) => {
    if (queue.length === 0) return;
    const size = Math.max(16, Math.floor(commitBudgetMs / perAppendMs));
    const batch = queue.length <= size ? queue : queue.slice(0, size);
    queue = queue.length <= size ? [] : queue.slice(size);
    const started = performance.now();
    try {
      store.commit(batch);
    } catch {
      // Every append of the batch carries the error as its outcome.
    }
    perAppendMs = 0.8 * perAppendMs + (0.2 * (performance.now() - started)) / batch.length;
    for (const append of batch) {
      const outcome = append.outcome!;
      if ("error" in outcome) append.reject(outcome.error);
      else append.resolve({ nextSeq: outcome.nextSeq });
    }
    if (queue.length > 0) schedule(store);
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
        queue.push({ runId, expectedSeq, bodies, events, resolve, reject });
        schedule(store);
      });
    },

    async acquireRun(runId: string): Promise<RunLease> {
      assertRunId(runId, "sqliteEventStore.acquireRun");
      const store = await open();
      const holder = newHolder();
      const text = JSON.stringify(holder);
      const where = `the row of run ${runId} in table loopguard_leases of ${store.where}`;
      const started = Date.now();
      let delayMs = 2;
      for (;;) {
        markHeld(holder.token, true);
        const outcome = store.takeLease(runId, text);
        if (outcome.taken) break;
        markHeld(holder.token, false);
        const waited = Date.now() - started;
        if (waited >= leaseTimeoutMs) {
          let shown = "another resumer";
          try {
            const other = JSON.parse(outcome.holder) as { pid?: number; host?: string };
            shown = `process ${other.pid} on ${other.host}`;
          } catch {
            // An unreadable holder is still a holder.
          }
          throw new RunLockedError(where, `${shown} (resuming run ${runId})`, waited);
        }
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 50);
      }
      let released = false;
      return {
        release: async () => {
          if (released) return;
          released = true;
          markHeld(holder.token, false);
          if (!closed) store.releaseLease(runId, text);
        },
      };
    },

    async *readBatches(runId: string, batchOptions: { batchSize?: number } = {}) {
      assertRunId(runId, "sqliteEventStore.readBatches");
      const batchSize = checkBatchSize(batchOptions.batchSize, "sqliteEventStore.readBatches");
      const store = await open();
      const cursor = chainStart(runId, chain.key);
      // Pages by seq, not one long-lived iterator: the connection stays free for commits.
      for (let from = 0; ; from += batchSize) {
        const rows = store.readPage.all(runId, from, batchSize);
        const events = rows.map((row, index) => parseRow(store, runId, row, from + index, cursor));
        if (events.length > 0) yield events;
        if (rows.length < batchSize) return;
        await new Promise((resolve) => setImmediate(resolve));
      }
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
      const rows = store.readRows.all(runId);
      const row = store.runRow.get(runId);
      const last = rows.at(-1)?.chain ?? undefined;
      if (row) {
        const recorded = (JSON.parse(row.summary) as RunSummary).events;
        const mismatch = runRowMismatch(
          runId,
          events.length,
          { events: recorded, head: row.head },
          last,
        );
        if (mismatch) return mismatch;
      }
      return verifiedLog(runId, events.length, last, chain.key);
    },

    async read(runId: string): Promise<StoredEvent[]> {
      assertRunId(runId, "sqliteEventStore.read");
      const store = await open();
      const rows = store.readRows.all(runId);
      // The chain is checked on every read: resume refuses a log that was tampered with.
      const cursor = chainStart(runId, chain.key);
      return rows.map((row, index) => parseRow(store, runId, row, index, cursor));
    },

    async list(filter: ListFilter = {}): Promise<RunSummary[]> {
      validateFilter(filter);
      const store = await open();
      const clauses: string[] = [];
      const parameters: Array<string | number> = [];
      if (filter.status !== undefined) {
        const statuses = typeof filter.status === "string" ? [filter.status] : [...filter.status];
        if (statuses.length === 0) return [];
        clauses.push(`status IN (${statuses.map(() => "?").join(", ")})`);
        parameters.push(...statuses);
      }
      if (filter.agentId !== undefined) {
        clauses.push("agent_id = ?");
        parameters.push(filter.agentId);
      }
      if (filter.updatedAfter !== undefined) {
        clauses.push("updated_at > ?");
        parameters.push(filter.updatedAfter);
      }
      const oldest = filter.order === "oldest";
      if (filter.after !== undefined) {
        clauses.push(`(updated_at ${oldest ? ">" : "<"} ? OR (updated_at = ? AND run_id > ?))`);
        parameters.push(filter.after.updatedAt, filter.after.updatedAt, filter.after.runId);
      }
      let sql = `SELECT summary FROM loopguard_runs${clauses.length > 0 ? ` WHERE ${clauses.join(" AND ")}` : ""} ORDER BY updated_at ${oldest ? "ASC" : "DESC"}, run_id`;
      if (filter.limit !== undefined) {
        sql += " LIMIT ?";
        parameters.push(filter.limit);
      }
      const rows = store.db.prepare(sql).all(...parameters) as Array<{ summary: string }>;
      // filterSummaries gives the exact order every store shares (ties by run id).
      return filterSummaries(
        rows.map((row) => JSON.parse(row.summary) as RunSummary),
        filter,
      );
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      const store = await ready?.catch(() => undefined);
      // Appends already queued are committed before the database closes.
      while (store && queue.length > 0) drain(store);
      if (store?.ownsDatabase && store.db.open) store.db.close();
    },
  };
  return self;
}
