import {
  AppendConflictError,
  type AppendResult,
  type RunSummary,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import type BetterSqlite3 from "better-sqlite3";
import { type ChainSettings, genesis, link } from "./hash-chain.js";
import { lineOf } from "./jsonl-log.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { StoreWriteError } from "./store-errors.js";

/** An append waiting for the next group commit. */
export interface PendingAppend {
  runId: string;
  expectedSeq: number;
  bodies: string[];
  events: readonly StoredEventInput[];
  /** Set by the commit: the log's new length, or why the append failed. */
  outcome?: { nextSeq: number } | { error: unknown };
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

/** The last summary and chain head this connection wrote for a run. */
interface Remembered {
  nextSeq: number;
  summary: RunSummary;
  head: string | undefined;
}

/**
 * The append-and-commit concern of the SQLite store: a batch of appends (from any runs) in one
 * `BEGIN IMMEDIATE` transaction, so the `expectedSeq` fence holds across connections and
 * processes and the batch costs one fsync. Each append's `outcome` is set: its new length, or
 * `AppendConflictError` (the fence did not hold), `StoreWriteError` (a keyed run without the
 * key), or SQLite's error for the whole batch when the transaction failed (then `commit`
 * throws it too, after rolling back).
 */
export class SqliteAppender {
  readonly #chain: ChainSettings;
  readonly #where: string;
  readonly #nextSeqOf: BetterSqlite3.Statement<[string], { next: number }>;
  readonly #insert: BetterSqlite3.Statement<
    [string, number, number, string, string, string | null]
  >;
  readonly #chainAt: BetterSqlite3.Statement<[string, number], { chain: string | null }>;
  readonly #summaryOf: BetterSqlite3.Statement<[string], { summary: string }>;
  readonly #upsert: BetterSqlite3.Statement<
    [string, string | null, string, number, string, string | null]
  >;
  readonly #commitInTransaction: BetterSqlite3.Transaction<(batch: PendingAppend[]) => void>;
  /**
   * Summaries and chain heads this connection wrote last, by run (checked against the log's
   * length before use, so another connection's appends are never missed).
   */
  readonly #remembered = new Map<string, Remembered>();

  constructor(connection: SqliteConnection, chain: ChainSettings) {
    const { db, where } = connection;
    this.#chain = chain;
    this.#where = where;
    this.#nextSeqOf = db.prepare<[string], { next: number }>(
      "SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM loopguard_events WHERE run_id = ?",
    );
    this.#insert = db.prepare<[string, number, number, string, string, string | null]>(
      "INSERT INTO loopguard_events (run_id, seq, at, type, body, chain) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.#chainAt = db.prepare<[string, number], { chain: string | null }>(
      "SELECT chain FROM loopguard_events WHERE run_id = ? AND seq = ?",
    );
    this.#summaryOf = db.prepare<[string], { summary: string }>(
      "SELECT summary FROM loopguard_runs WHERE run_id = ?",
    );
    this.#upsert = db.prepare<[string, string | null, string, number, string, string | null]>(
      "INSERT INTO loopguard_runs (run_id, agent_id, status, updated_at, summary, head) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET agent_id = excluded.agent_id, status = excluded.status, updated_at = excluded.updated_at, summary = excluded.summary, head = excluded.head",
    );
    this.#commitInTransaction = db.transaction((batch: PendingAppend[]) => {
      const lengths = new Map<string, number>();
      for (const append of batch) this.#appendOne(append, lengths);
    });
  }

  /**
   * Commits a batch. BEGIN IMMEDIATE: the write lock is taken before any fence is read, so two
   * writers cannot both see the same length. One transaction, so one fsync, for the whole batch.
   */
  commit(batch: PendingAppend[]): void {
    try {
      this.#commitInTransaction.immediate(batch);
    } catch (error) {
      // Rolled back: none of the batch is in the log, and the cached summaries may be ahead.
      this.#remembered.clear();
      for (const append of batch) append.outcome = { error };
      throw error;
    }
  }

  #appendOne(append: PendingAppend, lengths: Map<string, number>): void {
    const { runId, expectedSeq, bodies, events } = append;
    const chain = this.#chain;
    const length = lengths.get(runId) ?? this.#nextSeqOf.get(runId)!.next;
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
    const cached = this.#remembered.get(runId);
    // The chain continues from the last event's link (none: the log predates the chain).
    let head: string | undefined;
    if (length === 0) head = chain.enabled ? genesis(runId) : undefined;
    else if (cached?.nextSeq === length) head = cached.head;
    else head = this.#chainAt.get(runId, length - 1)?.chain ?? undefined;
    if (head?.startsWith("hmac:") && !chain.key) {
      append.outcome = {
        error: new StoreWriteError(
          `[checkpoint] run ${runId} in ${this.#where} is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
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
      this.#insert.run(runId, length + index, event.at, event.type, text, head ?? null);
      stored.push({ ...event, seq: length + index } as StoredEvent);
    }
    let previous: RunSummary | undefined;
    if (cached?.nextSeq === length) previous = cached.summary;
    else if (length > 0) {
      const row = this.#summaryOf.get(runId);
      previous = row ? (JSON.parse(row.summary) as RunSummary) : undefined;
    }
    const summary = summarize(previous, runId, stored);
    this.#upsert.run(
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
    const remembered = this.#remembered;
    remembered.delete(runId);
    remembered.set(runId, { nextSeq, summary, head });
    if (remembered.size > 10_000) remembered.delete(remembered.keys().next().value as string);
  }
}
