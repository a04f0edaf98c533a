import {
  AppendConflictError,
  type AppendOptions,
  type AppendResult,
  CorruptLogError,
  type EventStore,
  InvalidArgumentError,
  type ListFilter,
  LoopguardError,
  type RunSummary,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import { filterSummaries, summarize } from "@loopguard/core/plugin";
import type { D1Database, D1PreparedStatement } from "./d1-database.js";
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
}

/** The D1 event store. */
export interface D1EventStore extends EventStore {
  readonly name: "d1";
  /** Reads a run's log `batchSize` events at a time (default 1 000), a query per page. */
  readBatches(runId: string, options?: { batchSize?: number }): AsyncIterable<StoredEvent[]>;
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

interface EventRow {
  seq: number;
  part: number;
  body: string;
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

  const lengthAndSummary = async (runId: string) => {
    const row = await database
      .prepare(
        "SELECT (SELECT COALESCE(MAX(seq) + 1, 0) FROM loopguard_events WHERE run_id = ?1) AS next, (SELECT summary FROM loopguard_runs WHERE run_id = ?1) AS summary",
      )
      .bind(runId)
      .first<{ next: number; summary: string | null }>();
    return {
      length: row?.next ?? 0,
      summary: row?.summary ? (JSON.parse(row.summary) as RunSummary) : undefined,
    };
  };

  const insertStatements = (runId: string, events: StoredEvent[]): D1PreparedStatement[] => {
    const rows: Array<[number, number, number, string, string]> = [];
    for (const event of events) {
      const body = JSON.stringify(event);
      for (let part = 0, start = 0; start < body.length || part === 0; part++, start += partChars)
        rows.push([event.seq, part, event.at, event.type, body.slice(start, start + partChars)]);
    }
    const statements: D1PreparedStatement[] = [];
    for (let start = 0; start < rows.length; ) {
      // A long part goes alone; short rows share a statement.
      let end = start + 1;
      let chars = rows[start]![4].length;
      while (
        end < rows.length &&
        end - start < rowsPerStatement &&
        chars + rows[end]![4].length <= partChars
      ) {
        chars += rows[end]![4].length;
        end++;
      }
      const slice = rows.slice(start, end);
      statements.push(
        database
          .prepare(
            `INSERT INTO loopguard_events (run_id, seq, part, at, type, body) VALUES ${slice.map(() => "(?, ?, ?, ?, ?, ?)").join(", ")}`,
          )
          .bind(...slice.flatMap((row) => [runId, ...row])),
      );
      start = end;
    }
    return statements;
  };

  const readRows = async (
    runId: string,
    fromSeq: number,
    toSeq: number,
  ): Promise<StoredEvent[]> => {
    const { results = [] } = await database
      .prepare(
        "SELECT seq, part, body FROM loopguard_events WHERE run_id = ? AND seq >= ? AND seq < ? ORDER BY seq, part",
      )
      .bind(runId, fromSeq, toSeq)
      .all<EventRow>();
    return assemble(runId, results, fromSeq);
  };

  const tails = new Map<string, Promise<void>>();
  const appendNow = async (
    runId: string,
    events: readonly StoredEventInput[],
    appendOptions: AppendOptions,
  ): Promise<AppendResult> => {
    assertRunId(runId, "append");
    if (!Array.isArray(events))
      throw new InvalidArgumentError(
        "[cloudflare] append(runId, events): events must be an array of events",
      );
    const expectedSeq = appendOptions?.expectedSeq;
    if (!Number.isSafeInteger(expectedSeq) || expectedSeq < 0)
      throw new InvalidArgumentError(
        `[cloudflare] append: expectedSeq must be a non-negative integer (the log's length), got ${String(expectedSeq)}`,
      );
    await open();
    const { length, summary } = await lengthAndSummary(runId);
    if (length !== expectedSeq) throw new AppendConflictError(runId, expectedSeq, length);
    if (events.length === 0) return { nextSeq: length };
    const stored = events.map(
      (event: StoredEventInput, index) =>
        ({ ...structuredClone(event), seq: length + index }) as StoredEvent,
    );
    const next = summarize(summary, runId, stored);
    const statements = insertStatements(runId, stored);
    statements.push(
      database
        .prepare(
          "INSERT INTO loopguard_runs (run_id, agent_id, status, updated_at, summary) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET agent_id = excluded.agent_id, status = excluded.status, updated_at = excluded.updated_at, summary = excluded.summary",
        )
        .bind(runId, next.agentId ?? null, next.status, next.updatedAt, JSON.stringify(next)),
    );
    try {
      await database.batch(statements);
    } catch (error) {
      // Another writer committed at this length first: the primary key refused our rows and
      // D1 rolled the whole batch back.
      if (
        /UNIQUE constraint failed|PRIMARY KEY/i.test(String((error as Error)?.message ?? error))
      ) {
        const now = await lengthAndSummary(runId);
        throw new AppendConflictError(runId, expectedSeq, now.length);
      }
      throw error;
    }
    return { nextSeq: length + stored.length };
  };

  const store: D1EventStore = {
    name: "d1",
    append(runId, events, appendOptions: AppendOptions): Promise<AppendResult> {
      // Appends to one run from this store run in the order they were issued: a pipelined
      // append reads the length after the one before it committed (or failed).
      const previous = tails.get(runId) ?? Promise.resolve();
      const result = previous.then(() => appendNow(runId, events, appendOptions));
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
      return readRows(runId, 0, Number.MAX_SAFE_INTEGER);
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
        const page = await readRows(runId, from, from + batchSize);
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
    async close() {
      closed = true;
    },
  };
  return store;
}

/** Joins each event's parts and checks every seq and JSON; a damaged row is a CorruptLogError. */
function assemble(runId: string, rows: EventRow[], fromSeq: number): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (let index = 0; index < rows.length; ) {
    const seq = rows[index]!.seq;
    const where = `run ${runId} event ${seq} (table loopguard_events)`;
    if (seq !== fromSeq + events.length)
      throw new CorruptLogError(
        `[cloudflare] ${where}: expected seq ${fromSeq + events.length}, the log has a gap`,
      );
    let body = "";
    for (let part = 0; index < rows.length && rows[index]!.seq === seq; part++, index++) {
      if (rows[index]!.part !== part)
        throw new CorruptLogError(`[cloudflare] ${where}: part ${part} is missing`);
      body += rows[index]!.body;
    }
    let event: StoredEvent;
    try {
      event = JSON.parse(body) as StoredEvent;
    } catch (error) {
      throw new CorruptLogError(
        `[cloudflare] ${where} is not valid JSON; restore the row from a backup`,
        {
          cause: error,
        },
      );
    }
    if (event?.seq !== seq || typeof event.type !== "string")
      throw new CorruptLogError(
        `[cloudflare] ${where}: the stored event does not match its row (seq ${String(event?.seq)})`,
      );
    events.push(event);
  }
  return events;
}
