import {
  CorruptLogError,
  InvalidArgumentError,
  type ListFilter,
  type RunSummary,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import { checkBatchSize } from "./batch-size.js";
import {
  advance,
  type ChainSettings,
  chainStart,
  runRowMismatch,
  type VerifyResult,
  verifiedLog,
} from "./hash-chain.js";
import { chainText } from "./postgres-appender.js";
import type { PgPool } from "./postgres-pool.js";
import { assertRunId } from "./run-id.js";
import { validateFilter } from "./validate-filter.js";

/** What a `PostgresLogReader` needs from the store that composes it. */
export interface PostgresLogReaderSettings {
  /** The schema, as named in messages, and quoted for SQL. */
  schema: string;
  quoted: string;
  chain: ChainSettings;
  /** The pool, migrated (opened on first use). */
  ready: () => Promise<PgPool>;
  /** Names of the prepared statements. */
  names: { read: string; readPage: string };
}

/**
 * The reading concern of the PostgreSQL store: `read`, `readBatches` (keyset pages), `verify`
 * and `list`, checking every row's seq, JSON and hash chain. Rejects with
 * `InvalidArgumentError` for a bad run id or filter, `CorruptLogError` naming the run and seq of
 * a damaged row, or the driver's error; `verify` reports damage in its result instead.
 */
export class PostgresLogReader {
  readonly #settings: PostgresLogReaderSettings;

  constructor(settings: PostgresLogReaderSettings) {
    this.#settings = settings;
  }

  /** A run's rows in seq order (after checking the run id for `method`). */
  async #rowsOf(runId: string, method: string): Promise<Record<string, unknown>[]> {
    assertRunId(runId, `postgresEventStore.${method}`);
    const pool = await this.#settings.ready();
    const { rows } = await pool.query({
      name: this.#settings.names.read,
      text: `SELECT seq, body, chain FROM ${this.#settings.quoted}.events WHERE run_id = $1 ORDER BY seq`,
      values: [runId],
    });
    return rows;
  }

  /** A run's whole log, chain checked; `[]` for an unknown run. */
  async read(runId: string): Promise<StoredEvent[]> {
    return this.parseRows(runId, await this.#rowsOf(runId, "read"));
  }

  /** Parses a run's rows from seq 0; a damaged row throws `CorruptLogError` carrying its position as `seq`. */
  parseRows(runId: string, rows: Record<string, unknown>[]): StoredEvent[] {
    // The chain is checked on every read: resume refuses a log that was tampered with.
    const cursor = chainStart(runId, this.#settings.chain.key);
    let index = 0;
    try {
      return rows.map((row, position) => {
        index = position;
        return this.#parseRow(runId, row, position, cursor);
      });
    } catch (error) {
      // The position of the first bad event, for verify.
      throw Object.assign(error as Error, { seq: index });
    }
  }

  #parseRow(
    runId: string,
    row: Record<string, unknown>,
    index: number,
    cursor: ReturnType<typeof chainStart>,
  ): StoredEvent {
    const schema = this.#settings.schema;
    const seq = Number(row.seq);
    let body: unknown;
    try {
      body = JSON.parse(row.body as string);
    } catch (error) {
      throw new CorruptLogError(
        `[checkpoint] run ${runId} event ${seq} (table ${schema}.events) is not valid JSON: the row was damaged outside loopguard; restore it from a backup`,
        { cause: error },
      );
    }
    if (
      seq !== index ||
      !body ||
      typeof body !== "object" ||
      typeof (body as { type?: unknown }).type !== "string"
    ) {
      throw new CorruptLogError(
        `[checkpoint] run ${runId} event ${seq} (table ${schema}.events) is not an event at position ${index}: the row was damaged outside loopguard; restore it from a backup`,
      );
    }
    const broken = advance(
      cursor,
      chainText(seq, row.body as string),
      typeof row.chain === "string" ? row.chain : undefined,
    );
    if (broken)
      throw new CorruptLogError(
        `[checkpoint] run ${runId} event ${seq} (table ${schema}.events): ${broken}; loopguard never skips a damaged event: restore the run from a backup`,
      );
    return { ...(body as StoredEventInput), seq } as StoredEvent;
  }

  /** A run's log in keyset pages of `batchSize` events, the chain checked across pages. */
  async *readBatches(
    runId: string,
    batchOptions: { batchSize?: number } = {},
  ): AsyncGenerator<StoredEvent[]> {
    assertRunId(runId, "postgresEventStore.readBatches");
    const batchSize = checkBatchSize(batchOptions.batchSize, "postgresEventStore.readBatches");
    const pool = await this.#settings.ready();
    const cursor = chainStart(runId, this.#settings.chain.key);
    // Keyset pages by seq: one indexed range read each, the chain checked across pages.
    for (let from = 0; ; from += batchSize) {
      const { rows } = await pool.query({
        name: this.#settings.names.readPage,
        text: `SELECT seq, body, chain FROM ${this.#settings.quoted}.events WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
        values: [runId, from, batchSize],
      });
      const events = rows.map((row, index) => this.#parseRow(runId, row, from + index, cursor));
      if (events.length > 0) yield events;
      if (rows.length < batchSize) return;
    }
  }

  /** Checks a run's log end to end, and the head kept in its row; reports damage in the result. */
  async verify(runId: string): Promise<VerifyResult> {
    const rows = await this.#rowsOf(runId, "verify");
    const pool = await this.#settings.ready();
    try {
      this.parseRows(runId, rows);
    } catch (error) {
      const seq = (error as { seq?: number }).seq ?? 0;
      return { ok: false, runId, firstBadSeq: seq, events: seq, reason: (error as Error).message };
    }
    if (rows.length === 0)
      return {
        ok: false,
        runId,
        firstBadSeq: 0,
        events: 0,
        reason: `no log: run ${runId} has no events in ${this.#settings.schema}.events`,
      };
    const run = (
      await pool.query(
        `SELECT next_seq, head FROM ${this.#settings.quoted}.runs WHERE run_id = $1`,
        [runId],
      )
    ).rows[0];
    const last =
      typeof rows.at(-1)?.chain === "string" ? (rows.at(-1)!.chain as string) : undefined;
    return (
      runRowMismatch(
        runId,
        rows.length,
        { events: Number(run?.next_seq ?? 0), head: run?.head },
        last,
      ) ?? verifiedLog(runId, rows.length, last, this.#settings.chain.key)
    );
  }

  /** The summaries of the runs that match `filter`, one query, newest first unless `order: "oldest"`. */
  async list(filter: ListFilter = {}): Promise<RunSummary[]> {
    if (filter === null || typeof filter !== "object")
      throw new InvalidArgumentError(
        "[checkpoint] postgresEventStore.list(filter): filter must be an object",
      );
    if (filter.limit !== undefined && (!Number.isInteger(filter.limit) || filter.limit < 0)) {
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.list: limit must be a non-negative integer, got ${JSON.stringify(filter.limit)}`,
      );
    }
    validateFilter(filter);
    const pool = await this.#settings.ready();
    const conditions = ["summary IS NOT NULL"];
    const values: unknown[] = [];
    if (filter.status !== undefined) {
      values.push(typeof filter.status === "string" ? [filter.status] : [...filter.status]);
      conditions.push(`status = ANY($${values.length}::text[])`);
    }
    if (filter.agentId !== undefined) {
      values.push(filter.agentId);
      conditions.push(`agent_id = $${values.length}`);
    }
    if (filter.parentRunId !== undefined) {
      values.push(filter.parentRunId);
      conditions.push(`parent_run_id = $${values.length}`);
    }
    if (filter.rootRunId !== undefined) {
      values.push(filter.rootRunId);
      conditions.push(`root_run_id = $${values.length}`);
    }
    if (filter.updatedAfter !== undefined) {
      values.push(filter.updatedAfter);
      conditions.push(`updated_at > $${values.length}`);
    }
    const oldest = filter.order === "oldest";
    if (filter.after !== undefined) {
      values.push(filter.after.updatedAt, filter.after.runId);
      conditions.push(
        `(updated_at ${oldest ? ">" : "<"} $${values.length - 1} OR (updated_at = $${values.length - 1} AND run_id COLLATE "C" > $${values.length}))`,
      );
    }
    let limit = "";
    if (filter.limit !== undefined) {
      values.push(filter.limit);
      limit = `LIMIT $${values.length}`;
    }
    // ORDER BY run_id COLLATE "C" matches JavaScript's code-unit order for ties.
    const { rows } = await pool.query(
      `SELECT summary FROM ${this.#settings.quoted}.runs WHERE ${conditions.join(" AND ")} ORDER BY updated_at ${oldest ? "ASC" : "DESC"}, run_id COLLATE "C" ${limit}`,
      values,
    );
    return rows.map((row) => JSON.parse(row.summary as string) as RunSummary);
  }
}
