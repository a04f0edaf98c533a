import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  InvalidArgumentError,
  type ListFilter,
  LoopguardError,
  type RunLease,
  type RunSummary,
  type StoredEvent,
} from "@loopguard/core";
import { filterSummaries } from "@loopguard/core/plugin";
import { appendEvents } from "./d1-append.js";
import type { D1Database } from "./d1-database.js";
import { readRows } from "./d1-log.js";
import { D1RunLeases } from "./d1-run-leases.js";
import { d1Schema } from "./d1-schema.js";
import { listQuery } from "./list-query.js";

/** Options of {@link d1EventStore}. */
export interface D1EventStoreOptions {
  /** The D1 binding (`env.DB` in a Worker; `await miniflare.getD1Database("DB")` in a test). */
  database: D1Database;
  /**
   * Characters of one event's JSON per row: longer events are split over several rows (D1
   * refuses a row or bound value over 2 MB). Default 400 000 (at most 1.2 MB of UTF-8).
   */
  partChars?: number;
  /** Rows per INSERT statement (D1 allows 100 bound values per statement). Default 14. */
  rowsPerStatement?: number;
  /** How long `acquireRun` waits for another resumer of the run, in ms. Default 10 000. */
  leaseTimeoutMs?: number;
  /**
   * How long a run's lease lasts unless renewed (core renews it before each tool runs), in ms.
   * Default 300 000: longer than any model call, so only a holder that died waits it out.
   */
  leaseTtlMs?: number;
  /** The clock for leases (epoch ms). Default `Date.now`. */
  now?: () => number;
}

/** The D1 event store. */
export interface D1EventStore extends EventStore {
  readonly name: "d1";
  /** Reads a run's log `batchSize` events at a time (default 1 000), a query per page. */
  readBatches(runId: string, options?: { batchSize?: number }): AsyncIterable<StoredEvent[]>;
  /**
   * Takes run `runId` while core resumes it: a row in `loopguard_leases` names this store until
   * `release()`, so a second resumer waits up to `leaseTimeoutMs`, then gets `RunLockedError`,
   * before it executes anything.
   */
  acquireRun(runId: string): Promise<RunLease>;
  /** Renews this store's lease before a tool runs; `RunLeaseLostError` if it was taken over. */
  confirmOwner(runId: string): Promise<void>;
  /** Stops using the binding (D1 has nothing to close); later calls throw. Safe twice. */
  close(): Promise<void>;
}

/** A run's store was closed. Code `store_closed`. */
export class StoreClosedError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.StoreClosedError";
  constructor() {
    super(
      "store_closed",
      "[cloudflare] this d1EventStore was closed; create a new one to read or write runs",
    );
  }
}

const runIdPattern = /^[A-Za-z0-9_.:-]{1,128}$/;

function assertRunId(runId: unknown, where: string): asserts runId is string {
  if (typeof runId === "string" && runIdPattern.test(runId) && runId !== "." && runId !== "..")
    return;
  const shown = typeof runId === "string" ? JSON.stringify(runId.slice(0, 60)) : String(runId);
  throw new InvalidArgumentError(
    `[cloudflare] ${where}: run id ${shown} is invalid: use 1 to 128 letters, digits, "_", ".", ":" or "-" (the run ids createAgent makes)`,
  );
}

/**
 * An `EventStore` on Cloudflare D1 (SQLite at the edge), for agents that run in Workers: one
 * row per event (or per part of a long event) in `loopguard_events`, a summary per run in
 * `loopguard_runs` for `list`. An append is one `batch` (one D1 transaction): its rows and the
 * run's new summary commit together or not at all. The `expectedSeq` fence: the append reads
 * the log's length and refuses a stale `expectedSeq` with `AppendConflictError`; two writers
 * that both saw the same length then race on the primary key (run, seq, part), so exactly one
 * batch commits and the other gets `AppendConflictError` with nothing written.
 *
 * @example
 * export default {
 *   async fetch(request, env) {
 *     const agent = createAgent({ model, tools, store: d1EventStore({ database: env.DB }) });
 *     ...
 *   },
 * };
 */
export function d1EventStore(options: D1EventStoreOptions): D1EventStore {
  const database = options?.database;
  if (typeof database?.prepare !== "function" || typeof database.batch !== "function")
    throw new InvalidArgumentError(
      "[cloudflare] d1EventStore(options): database must be a D1 binding (env.DB in a Worker, with [[d1_databases]] in wrangler.toml)",
    );
  const { partChars, rowsPerStatement, lease } = settingsOf(options);
  const leases = new D1RunLeases(database, lease);
  let closed = false;
  let ready: Promise<void> | undefined;
  const open = async () => {
    if (closed) throw new StoreClosedError();
    ready ??= database.batch(d1Schema.map((sql) => database.prepare(sql))).then(
      () => undefined,
      (error: unknown) => {
        ready = undefined;
        throw error;
      },
    );
    await ready;
  };

  const tails = new Map<string, Promise<void>>();
  const store: D1EventStore = {
    name: "d1",
    append(runId, events, appendOptions: AppendOptions): Promise<AppendResult> {
      // Appends to one run from this store run in the order they were issued: a pipelined
      // append reads the length after the one before it committed (or failed).
      const previous = tails.get(runId) ?? Promise.resolve();
      const result = previous.then(async () => {
        assertRunId(runId, "append");
        return appendEvents(
          database,
          { partChars, rowsPerStatement },
          runId,
          events,
          appendOptions,
          open,
        );
      });
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(runId, tail);
      void tail.then(() => {
        if (tails.get(runId) === tail) tails.delete(runId);
      });
      return result;
    },
    async read(runId) {
      assertRunId(runId, "read");
      await open();
      return readRows(database, runId, 0, Number.MAX_SAFE_INTEGER);
    },
    async *readBatches(runId, batchOptions = {}) {
      assertRunId(runId, "readBatches");
      const batchSize = batchOptions.batchSize ?? 1_000;
      if (!Number.isSafeInteger(batchSize) || batchSize < 1)
        throw new InvalidArgumentError(
          `[cloudflare] readBatches: batchSize must be a positive integer, got ${String(batchSize)}`,
        );
      await open();
      for (let from = 0; ; from += batchSize) {
        const page = await readRows(database, runId, from, from + batchSize);
        if (page.length === 0) return;
        yield page;
        if (page.length < batchSize) return;
      }
    },
    async list(filter: ListFilter = {}) {
      const query = listQuery(filter);
      await open();
      const { results = [] } = await database
        .prepare(query.sql)
        .bind(...query.values)
        .all<{ summary: string }>();
      return filterSummaries(
        results.map((row) => JSON.parse(row.summary) as RunSummary),
        filter,
      );
    },
    async acquireRun(runId) {
      assertRunId(runId, "acquireRun");
      await open();
      return leases.acquire(runId);
    },
    async confirmOwner(runId) {
      assertRunId(runId, "confirmOwner");
      await open();
      await leases.confirm(runId);
    },
    async close() {
      closed = true;
    },
  };
  return store;
}

/** The store's settings from its options, each checked (an `[cloudflare]` error names a bad one). */
function settingsOf(options: D1EventStoreOptions) {
  const partChars = options.partChars ?? 400_000;
  const rowsPerStatement = options.rowsPerStatement ?? 14;
  if (!Number.isSafeInteger(partChars) || partChars < 1)
    throw new InvalidArgumentError(
      `[cloudflare] d1EventStore: partChars must be a positive integer, got ${String(partChars)}`,
    );
  if (!Number.isSafeInteger(rowsPerStatement) || rowsPerStatement < 1 || rowsPerStatement > 16)
    throw new InvalidArgumentError(
      `[cloudflare] d1EventStore: rowsPerStatement must be an integer from 1 to 16 (D1 binds at most 100 values), got ${String(rowsPerStatement)}`,
    );
  const waitMs = options.leaseTimeoutMs ?? 10_000;
  const ttlMs = options.leaseTtlMs ?? 300_000;
  for (const [name, value] of [
    ["leaseTimeoutMs", waitMs],
    ["leaseTtlMs", ttlMs],
  ] as const)
    if (!Number.isSafeInteger(value) || value < 0)
      throw new InvalidArgumentError(
        `[cloudflare] d1EventStore: ${name} must be a non-negative integer of milliseconds, got ${String(value)}`,
      );
  const now = options.now ?? Date.now;
  if (typeof now !== "function")
    throw new InvalidArgumentError(
      "[cloudflare] d1EventStore: now must be a function returning epoch ms",
    );
  return { partChars, rowsPerStatement, lease: { waitMs, ttlMs, now } };
}
