import {
  AppendConflictError,
  type AppendResult,
  InvalidArgumentError,
  type RunSummary,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import { type ChainSettings, genesis, link } from "./hash-chain.js";
import { FencedError, PostgresStoreError } from "./postgres-errors.js";
import type { PgPool } from "./postgres-pool.js";
import type { PostgresAppendOptions } from "./postgres-store-types.js";
import { assertRunId } from "./run-id.js";

/** What a `PostgresAppender` needs from the store that composes it. */
export interface PostgresAppenderSettings {
  /** The schema, as named in messages, and quoted for SQL. */
  schema: string;
  quoted: string;
  chain: ChainSettings;
  /** The pool, migrated (opened on first use). */
  ready: () => Promise<PgPool>;
  /** Names of the prepared statements. */
  names: { append: string; runRow: string };
}

/** An append's events as the insert takes them, one array per column. */
interface Encoded {
  seqs: number[];
  ats: number[];
  types: string[];
  bodies: string[];
  stored: StoredEvent[];
}

/** The last summary this process wrote per run, so an append usually needs one round trip. */
interface Remembered {
  nextSeq: number;
  summary: RunSummary;
  head: string | undefined;
}

/**
 * The append-and-commit concern of the PostgreSQL store: appends to one run issued by this
 * process are applied in the order they were issued, each one statement that upserts the run's
 * row (seq and epoch checked on its latest version, under its row lock) and inserts the events,
 * chained, atomically. Rejects with `InvalidArgumentError` for bad input,
 * `AppendConflictError` when `expectedSeq` is not the log's length, `FencedError` when the
 * writer's epoch is no longer the run's, `PostgresStoreError` for a keyed run without the key,
 * or the driver's error.
 */
export class PostgresAppender {
  readonly #settings: PostgresAppenderSettings;
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #remembered = new Map<string, Remembered>();

  constructor(settings: PostgresAppenderSettings) {
    this.#settings = settings;
  }

  /** The next seq of a run as this process last wrote it (0 when unknown). */
  nextSeqOf(runId: string): number {
    return this.#remembered.get(runId)?.nextSeq ?? 0;
  }

  /** Appends events, after every earlier append of this process to the run has settled. */
  append(
    runId: string,
    events: readonly StoredEventInput[],
    appendOptions: PostgresAppendOptions,
  ): Promise<AppendResult> {
    // Core's writer may pipeline appends: they cannot overtake each other on two connections.
    const queues = this.#queues;
    const previous = queues.get(runId) ?? Promise.resolve();
    const next = previous.then(() => this.#appendNow(runId, events, appendOptions));
    const settled = next.catch(() => undefined);
    queues.set(runId, settled);
    void settled.then(() => {
      if (queues.get(runId) === settled) queues.delete(runId);
    });
    return next;
  }

  async #appendNow(
    runId: string,
    events: readonly StoredEventInput[],
    appendOptions: PostgresAppendOptions,
  ): Promise<AppendResult> {
    const { expectedSeq, epoch } = checkAppend(runId, events, appendOptions);
    const { quoted: s, chain, schema } = this.#settings;
    const pool = await this.#settings.ready();
    if (events.length === 0) {
      const { rows } = await pool.query(`SELECT epoch, next_seq FROM ${s}.runs WHERE run_id = $1`, [
        runId,
      ]);
      const actual = Number(rows[0]?.next_seq ?? 0);
      if (epoch !== undefined && Number(rows[0]?.epoch ?? 0) !== epoch)
        throw new FencedError(runId, epoch, Number(rows[0]?.epoch ?? 0), expectedSeq, actual);
      if (actual !== expectedSeq) throw new AppendConflictError(runId, expectedSeq, actual);
      return { nextSeq: actual };
    }
    const encoded = encode(events, expectedSeq);
    let { previous, head } = await this.#base(pool, runId, expectedSeq);
    if (head?.startsWith("hmac:") && !chain.key)
      throw new PostgresStoreError(
        `[checkpoint] run ${runId} (schema ${schema}) is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
      );
    const chains: Array<string | null> = [];
    for (const [index, body] of encoded.bodies.entries()) {
      if (head !== undefined) head = link(head, chainText(expectedSeq + index, body), chain.key);
      chains.push(head ?? null);
    }
    const summary = summarize(previous, runId, encoded.stored);
    const nextSeq = expectedSeq + events.length;
    // One statement, so one atomic step: the guarded upsert of the run's row (seq and epoch
    // checked on the row's latest version, under its row lock) and the insert of the events
    // happen together or not at all. A claim (an UPDATE of the same row) waits for it.
    const { rows } = await pool.query({
      name: this.#settings.names.append,
      text: appendStatement(s),
      values: [
        runId,
        epoch ?? null,
        encoded.seqs,
        encoded.ats,
        encoded.types,
        encoded.bodies,
        nextSeq,
        summary.status,
        summary.agentId ?? null,
        Math.round(summary.createdAt),
        Math.round(summary.updatedAt),
        JSON.stringify(summary),
        expectedSeq,
        chains,
        head ?? null,
        summary.parentRunId ?? null,
        summary.rootRunId ?? null,
      ],
    });
    if (rows.length === 0) {
      this.#remembered.delete(runId);
      const current = await pool.query(`SELECT epoch, next_seq FROM ${s}.runs WHERE run_id = $1`, [
        runId,
      ]);
      const currentEpoch = Number(current.rows[0]?.epoch ?? 0);
      const actual = Number(current.rows[0]?.next_seq ?? 0);
      if (epoch !== undefined && currentEpoch !== epoch)
        throw new FencedError(runId, epoch, currentEpoch, expectedSeq, actual);
      throw new AppendConflictError(runId, expectedSeq, actual);
    }
    this.#remember(runId, { nextSeq, summary, head });
    return { nextSeq };
  }

  /**
   * The summary and chain head the append builds on. The summary is a function of the log's
   * prefix, so the one cached (or read) at next_seq = expectedSeq is the right base whenever
   * the guarded write succeeds; the chain continues from the run's head (none: a log from
   * before the chain).
   */
  async #base(
    pool: PgPool,
    runId: string,
    expectedSeq: number,
  ): Promise<{ previous: RunSummary | undefined; head: string | undefined }> {
    const { quoted: s, chain } = this.#settings;
    let previous: RunSummary | undefined;
    let head: string | undefined = chain.enabled ? genesis(runId) : undefined;
    if (expectedSeq > 0) {
      const cached = this.#remembered.get(runId);
      if (cached?.nextSeq === expectedSeq) {
        previous = cached.summary;
        head = cached.head;
      } else {
        const { rows } = await pool.query({
          name: this.#settings.names.runRow,
          text: `SELECT next_seq, summary, head FROM ${s}.runs WHERE run_id = $1`,
          values: [runId],
        });
        if (Number(rows[0]?.next_seq ?? 0) === expectedSeq && typeof rows[0]?.summary === "string")
          previous = JSON.parse(rows[0].summary) as RunSummary;
        // Read with next_seq: the guarded write fails unless it is still the head.
        head = typeof rows[0]?.head === "string" ? rows[0].head : undefined;
      }
    }
    return { previous, head };
  }

  #remember(runId: string, remembered: Remembered): void {
    const map = this.#remembered;
    map.delete(runId);
    map.set(runId, remembered);
    if (map.size > 10_000) map.delete(map.keys().next().value as string);
  }
}

/** Checks an append's input; throws `InvalidArgumentError` naming what is wrong. */
function checkAppend(
  runId: string,
  events: readonly StoredEventInput[],
  appendOptions: PostgresAppendOptions,
): { expectedSeq: number; epoch: number | undefined } {
  assertRunId(runId, "postgresEventStore.append");
  if (!Array.isArray(events))
    throw new InvalidArgumentError(
      `[checkpoint] postgresEventStore.append(${runId}): events must be an array`,
    );
  const expectedSeq = appendOptions?.expectedSeq;
  if (!Number.isInteger(expectedSeq) || expectedSeq < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] postgresEventStore.append(${runId}): expectedSeq must be a non-negative integer, got ${JSON.stringify(expectedSeq)}`,
    );
  }
  const epoch = appendOptions.epoch;
  if (epoch !== undefined && (!Number.isInteger(epoch) || epoch < 1)) {
    throw new InvalidArgumentError(
      `[checkpoint] postgresEventStore.append(${runId}): epoch must be a positive integer from claim(), got ${JSON.stringify(epoch)}`,
    );
  }
  for (const [index, event] of events.entries()) {
    if (
      !event ||
      typeof event !== "object" ||
      typeof (event as { type?: unknown }).type !== "string"
    ) {
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.append(${runId}): events[${index}] must be an event object with a string type`,
      );
    }
  }
  return { expectedSeq, epoch };
}

/** The columns of an append's events (bodies without seq, copies with it). */
function encode(events: readonly StoredEventInput[], expectedSeq: number): Encoded {
  const encoded: Encoded = { seqs: [], ats: [], types: [], bodies: [], stored: [] };
  for (const [index, event] of events.entries()) {
    const { seq: _ignored, ...rest } = event as StoredEventInput & { seq?: unknown };
    const body = JSON.stringify(rest);
    const copy = {
      ...(JSON.parse(body) as StoredEventInput),
      seq: expectedSeq + index,
    } as StoredEvent;
    encoded.seqs.push(copy.seq);
    encoded.ats.push(
      typeof copy.at === "number" && Number.isFinite(copy.at) ? Math.round(copy.at) : Date.now(),
    );
    encoded.types.push(copy.type);
    encoded.bodies.push(body);
    encoded.stored.push(copy);
  }
  return encoded;
}

/** The append statement: the guarded upsert of the run's row and the insert of the events. */
function appendStatement(s: string): string {
  return `WITH guard AS (
         INSERT INTO ${s}.runs AS r (run_id, next_seq, status, agent_id, created_at, updated_at, summary, head, parent_run_id, root_run_id)
         SELECT $1, $7, $8, $9, $10, $11, $12, $15, $16, $17 WHERE $13::integer = 0 AND $2::bigint IS NULL
         ON CONFLICT (run_id) DO UPDATE SET next_seq = excluded.next_seq, status = excluded.status, agent_id = excluded.agent_id,
           created_at = excluded.created_at, updated_at = excluded.updated_at, summary = excluded.summary, head = excluded.head,
           parent_run_id = excluded.parent_run_id, root_run_id = excluded.root_run_id
         WHERE r.next_seq = $13 AND ($2::bigint IS NULL OR r.epoch = $2)
         RETURNING r.epoch
       ), fenced_update AS (
         UPDATE ${s}.runs SET next_seq = $7, status = $8, agent_id = $9, created_at = $10, updated_at = $11, summary = $12, head = $15,
           parent_run_id = $16, root_run_id = $17
         WHERE run_id = $1 AND NOT ($13::integer = 0 AND $2::bigint IS NULL) AND next_seq = $13 AND ($2::bigint IS NULL OR epoch = $2)
         RETURNING epoch
       ), written AS (
         SELECT epoch FROM guard UNION ALL SELECT epoch FROM fenced_update
       ), inserted AS (
         INSERT INTO ${s}.events (run_id, seq, epoch, at, type, body, chain)
         SELECT $1, input.seq, (SELECT epoch FROM written LIMIT 1), input.at, input.type, input.body, input.chain
         FROM unnest($3::integer[], $4::bigint[], $5::text[], $6::text[], $14::text[]) AS input(seq, at, type, body, chain)
         WHERE EXISTS (SELECT 1 FROM written)
       )
       SELECT epoch FROM written`;
}

/** The text an event's chain link covers: its stored body with its seq in front, as in a JSONL line. */
export function chainText(seq: number, body: string): string {
  return `{"seq":${seq},${body.slice(1)}`;
}
