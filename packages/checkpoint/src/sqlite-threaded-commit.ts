import { AppendConflictError, type RunSummary, type StoredEvent } from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import type BetterSqlite3 from "better-sqlite3";
import { type ChainSettings, genesis, link } from "./hash-chain.js";
import { lineOf } from "./jsonl-log.js";
import type { PendingAppend } from "./sqlite-appender.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import type { SqliteWriterThread, WriterItem, WriterOutcome } from "./sqlite-writer-thread.js";
import { StoreWriteError } from "./store-errors.js";

/** What this connection knows of a run's log: after its own last commit to it, or the one queued. */
interface Known {
  nextSeq: number;
  summary: RunSummary | undefined;
  head: string | undefined;
}

/** An append with its rows built, waiting for the writer thread. */
interface Queued {
  append: PendingAppend;
  item: WriterItem;
  attempts: number;
}

/**
 * How long building appends (JSON, hash chain, summary) may keep the event loop in one turn, in
 * ms; the rest are built on the next turns, while a batch is in flight.
 */
const turnBudgetMs = 8;

/**
 * The most appends one transaction carries: bigger batches save few fsyncs and cost the main
 * thread long stretches of copying, settling and collecting garbage.
 */
const maxBatch = 256;

/** How many times an append is rebuilt when the log moved under it before it errs. */
const maxAttempts = 5;

/**
 * Group commit through the writer thread: appends wait for the next turn of the event loop, are
 * built there (at most `turnBudgetMs` of work a turn) and go to the thread together (one transaction, one fsync, off the main thread); while a batch is
 * in flight the next one gathers. The main thread builds each append's rows (JSON, the hash
 * chain, the run's summary) from what it knows of the log (its own last commit, or a read of
 * the committed log), and the thread re-checks that knowledge inside the transaction, so the
 * `expectedSeq` fence and the chain hold across connections and processes. Never throws: each
 * append settles with its own outcome.
 */
export class SqliteThreadedCommit {
  readonly #thread: SqliteWriterThread;
  readonly #chain: ChainSettings;
  readonly #where: string;
  readonly #readState: BetterSqlite3.Transaction<
    (runId: string) => { length: number; head: string | null; summary: string | undefined }
  >;
  readonly #known = new Map<string, Known>();
  /** Appends waiting to be built, in arrival order. */
  #waiting: Array<{ append: PendingAppend; attempts: number }> = [];
  /** Appends built, waiting for the next batch. */
  #built: Queued[] = [];
  #inFlight: Promise<void> | undefined;
  #scheduled = false;
  /** Milliseconds settling one append costs, its caller's work included (a moving average). */
  #perSettleMs = 0.05;
  /** Batches committed whose appends are still being settled, a turn's worth at a time. */
  #settling = 0;
  /** Milliseconds one build costs (a moving average), to size a turn's work. */
  #perBuildMs = 0.05;

  constructor(connection: SqliteConnection, chain: ChainSettings, thread: SqliteWriterThread) {
    const { db, where } = connection;
    this.#thread = thread;
    this.#chain = chain;
    this.#where = where;
    const nextSeqOf = db.prepare<[string], { next: number }>(
      "SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM loopguard_events WHERE run_id = ?",
    );
    const chainAt = db.prepare<[string, number], { chain: string | null }>(
      "SELECT chain FROM loopguard_events WHERE run_id = ? AND seq = ?",
    );
    const summaryOf = db.prepare<[string], { summary: string }>(
      "SELECT summary FROM loopguard_runs WHERE run_id = ?",
    );
    // One read transaction: the length, last link and summary of one committed state.
    this.#readState = db.transaction((runId: string) => {
      const length = nextSeqOf.get(runId)!.next;
      const head = length > 0 ? (chainAt.get(runId, length - 1)?.chain ?? null) : null;
      return { length, head, summary: summaryOf.get(runId)?.summary };
    });
  }

  /** Queues an append: it is built on a later turn and sent with the next batch. */
  enqueue(append: PendingAppend, attempts = 0): void {
    this.#waiting.push({ append, attempts });
    this.#schedule();
  }

  /** Resolves once every append queued so far has settled. */
  async flush(): Promise<void> {
    while (
      this.#waiting.length > 0 ||
      this.#built.length > 0 ||
      this.#inFlight ||
      this.#scheduled ||
      this.#settling > 0
    ) {
      if (this.#inFlight) await this.#inFlight;
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  #build(append: PendingAppend, attempts: number): Queued {
    const { runId, expectedSeq, bodies, events } = append;
    let known = this.#known.get(runId);
    // A first append builds on nothing (the thread's fence catches a log that is not empty).
    if (expectedSeq === 0) known = { nextSeq: 0, summary: undefined, head: undefined };
    else if (known?.nextSeq !== expectedSeq) {
      const state = this.#readState(runId);
      known = {
        nextSeq: state.length,
        head: state.head ?? undefined,
        summary:
          state.summary === undefined ? undefined : (JSON.parse(state.summary) as RunSummary),
      };
    }
    const previousHead = known.nextSeq > 0 ? (known.head ?? null) : null;
    const base = { append, attempts };
    // Another length: the thread answers the fence (a conflict, or `stale` if it moved meanwhile).
    if (known.nextSeq !== expectedSeq)
      return { ...base, item: { runId, expectedSeq, previousHead } };
    if (bodies.length === 0)
      return { ...base, item: { runId, expectedSeq, previousHead, rows: [] } };
    let head = expectedSeq === 0 ? (this.#chain.enabled ? genesis(runId) : undefined) : known.head;
    if (head?.startsWith("hmac:") && !this.#chain.key) {
      throw new StoreWriteError(
        `[checkpoint] run ${runId} in ${this.#where} is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
      );
    }
    const rows: NonNullable<WriterItem["rows"]> = [];
    const stored: StoredEvent[] = [];
    for (let index = 0; index < bodies.length; index += 1) {
      const event = events[index]!;
      const seq = expectedSeq + index;
      const body = lineOf(seq, bodies[index]!).slice(0, -1);
      if (head !== undefined) head = link(head, body, this.#chain.key);
      rows.push({ seq, at: event.at, type: event.type, body, chain: head ?? null });
      stored.push({ ...event, seq } as StoredEvent);
    }
    const summary = summarize(expectedSeq > 0 ? known.summary : undefined, runId, stored);
    const run = {
      agentId: summary.agentId ?? null,
      status: summary.status,
      updatedAt: summary.updatedAt,
      summary: JSON.stringify(summary),
      head: head ?? null,
    };
    // What the log will be once this append commits: a pipelined append to the same run builds on
    // it (the thread's checks catch a prediction that did not come true).
    this.#remember(runId, { nextSeq: expectedSeq + bodies.length, summary, head });
    return { append, attempts, item: { runId, expectedSeq, previousHead, rows, run } };
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#buildSome();
      this.#send();
      if (this.#waiting.length > 0) this.#schedule();
    });
  }

  /** Builds waiting appends, in order, for at most `turnBudgetMs` of this turn. */
  #buildSome(): void {
    const size = Math.max(16, Math.floor(turnBudgetMs / this.#perBuildMs));
    const taken = this.#waiting.splice(0, size);
    if (taken.length === 0) return;
    const started = performance.now();
    for (const { append, attempts } of taken) {
      try {
        this.#built.push(this.#build(append, attempts));
      } catch (error) {
        append.reject(error);
      }
    }
    this.#perBuildMs =
      0.8 * this.#perBuildMs + (0.2 * (performance.now() - started)) / taken.length;
  }

  #send(): void {
    if (this.#inFlight || this.#built.length === 0) return;
    const batch = this.#built.splice(0, maxBatch);
    this.#inFlight = this.#thread
      .commit(batch.map((queued) => queued.item))
      .then(
        (outcomes) => this.#settleInTurns(batch, outcomes),
        (error: unknown) => {
          // Rolled back or never committed: what this connection knew may be ahead of the log.
          this.#known.clear();
          for (const queued of batch) queued.append.reject(error);
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
        if (this.#built.length > 0 || this.#waiting.length > 0) this.#schedule();
      });
  }

  /**
   * Settles a batch a turn's worth at a time: each settled append wakes its caller, whose work
   * runs in the same stretch of microtasks, so a batch of thousands is spread over turns.
   */
  #settleInTurns(batch: Queued[], outcomes: WriterOutcome[]): void {
    const size = Math.max(16, Math.floor(turnBudgetMs / this.#perSettleMs));
    const count = Math.min(size, batch.length);
    const started = performance.now();
    this.#settle(batch.slice(0, count), outcomes.slice(0, count));
    this.#settling += 1;
    setImmediate(() => {
      this.#settling -= 1;
      // What settling cost this turn, the callers' work it woke included.
      this.#perSettleMs = 0.8 * this.#perSettleMs + (0.2 * (performance.now() - started)) / count;
      if (batch.length > count) this.#settleInTurns(batch.slice(count), outcomes.slice(count));
    });
  }

  #settle(batch: Queued[], outcomes: WriterOutcome[]): void {
    batch.forEach((queued, index) => {
      const outcome = outcomes[index]!;
      const { append } = queued;
      if (outcome.kind === "ok") {
        append.resolve({ nextSeq: outcome.nextSeq });
      } else if (outcome.kind === "conflict") {
        this.#known.delete(append.runId);
        append.reject(new AppendConflictError(append.runId, append.expectedSeq, outcome.length));
      } else if (queued.attempts + 1 < maxAttempts) {
        this.#known.delete(append.runId);
        this.enqueue(append, queued.attempts + 1);
      } else {
        append.reject(
          new StoreWriteError(
            `[checkpoint] run ${append.runId} in ${this.#where} kept changing under append at seq ${append.expectedSeq} (${maxAttempts} attempts): nothing was appended; read the run and append again`,
          ),
        );
      }
    });
  }

  #remember(runId: string, known: Known): void {
    const map = this.#known;
    map.delete(runId);
    map.set(runId, known);
    if (map.size > 10_000) map.delete(map.keys().next().value as string);
  }
}
