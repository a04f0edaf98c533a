import {
  CorruptLogError,
  type ListFilter,
  type RunSummary,
  type StoredEvent,
} from "@loopguard/core";
import { filterSummaries } from "@loopguard/core/plugin";
import type BetterSqlite3 from "better-sqlite3";
import {
  advance,
  type ChainSettings,
  chainStart,
  runRowMismatch,
  type VerifyResult,
  verifiedLog,
} from "./hash-chain.js";
import type { SqliteConnection } from "./sqlite-connection.js";

type Row = { seq: number; body: string; chain: string | null };

/**
 * The reading concern of the SQLite store, on an open connection: a run's log (whole or in
 * pages), `verify` against the run's row, and `list`. Each row is checked (its place, JSON and
 * hash chain link): a damaged one throws `CorruptLogError` naming the run and seq, with the
 * position as `seq`. Callers check run ids and filters first.
 */
export class SqliteLogReader {
  readonly #connection: SqliteConnection;
  readonly #chain: ChainSettings;
  readonly #readRows: BetterSqlite3.Statement<[string], Row>;
  readonly #readPage: BetterSqlite3.Statement<[string, number, number], Row>;
  readonly #runRow: BetterSqlite3.Statement<[string], { summary: string; head: string | null }>;

  constructor(connection: SqliteConnection, chain: ChainSettings) {
    const { db } = connection;
    this.#connection = connection;
    this.#chain = chain;
    this.#readRows = db.prepare<[string], Row>(
      "SELECT seq, body, chain FROM loopguard_events WHERE run_id = ? ORDER BY seq",
    );
    this.#readPage = db.prepare<[string, number, number], Row>(
      "SELECT seq, body, chain FROM loopguard_events WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
    );
    this.#runRow = db.prepare<[string], { summary: string; head: string | null }>(
      "SELECT summary, head FROM loopguard_runs WHERE run_id = ?",
    );
  }

  /** A run's whole log, chain checked; `[]` for an unknown run. */
  read(runId: string): StoredEvent[] {
    const rows = this.#readRows.all(runId);
    // The chain is checked on every read: resume refuses a log that was tampered with.
    const cursor = chainStart(runId, this.#chain.key);
    return rows.map((row, index) => parseRow(this.#connection, runId, row, index, cursor));
  }

  /** A run's log in pages of `batchSize` by seq (not one long-lived iterator: the connection stays free for commits). */
  async *pages(runId: string, batchSize: number): AsyncGenerator<StoredEvent[]> {
    const cursor = chainStart(runId, this.#chain.key);
    for (let from = 0; ; from += batchSize) {
      const rows = this.#readPage.all(runId, from, batchSize);
      const events = rows.map((row, index) =>
        parseRow(this.#connection, runId, row, from + index, cursor),
      );
      if (events.length > 0) yield events;
      if (rows.length < batchSize) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Checks a log already read whole (`events`, at least one) against the run's row: its event count and head. */
  verifyRead(runId: string, events: StoredEvent[]): VerifyResult {
    const rows = this.#readRows.all(runId);
    const row = this.#runRow.get(runId);
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
    return verifiedLog(runId, events.length, last, this.#chain.key);
  }

  /** The summaries of the runs that match `filter` (already validated). */
  list(filter: ListFilter): RunSummary[] {
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
    // The same expressions as the indexes loopguard_runs_by_parent / _by_root.
    if (filter.parentRunId !== undefined) {
      clauses.push("json_extract(summary, '$.parentRunId') = ?");
      parameters.push(filter.parentRunId);
    }
    if (filter.rootRunId !== undefined) {
      clauses.push("json_extract(summary, '$.rootRunId') = ?");
      parameters.push(filter.rootRunId);
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
    const rows = this.#connection.db.prepare(sql).all(...parameters) as Array<{ summary: string }>;
    // filterSummaries gives the exact order every store shares (ties by run id).
    return filterSummaries(
      rows.map((row) => JSON.parse(row.summary) as RunSummary),
      filter,
    );
  }
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
