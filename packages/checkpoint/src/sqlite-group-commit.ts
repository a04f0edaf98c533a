import type { PendingAppend, SqliteAppender } from "./sqlite-appender.js";

/**
 * How long one group commit may keep the event loop, in ms, before it commits what it has
 * and lets other work run (the rest waits for the next turn).
 */
const commitBudgetMs = 8;

/**
 * Group commit of the SQLite store: appends from every run wait for the next turn of the event
 * loop and are committed together, one transaction (one fsync) per turn, each turn at most
 * `commitBudgetMs` of work, so ten thousand runs appending at once never hold the event loop
 * for long (better-sqlite3 is synchronous: without this, each append's commit, fsync included,
 * ran back to back in one stretch of microtasks). Never throws: each append settles with its
 * own outcome.
 */
export class SqliteGroupCommit {
  #queue: PendingAppend[] = [];
  #scheduled = false;
  /** Milliseconds one append costs inside a commit (a moving average), to size the next batch. */
  #perAppendMs = 0.05;

  /** Queues an append for the next turn's commit through `appender`. */
  enqueue(appender: SqliteAppender, append: PendingAppend): void {
    this.#queue.push(append);
    this.#schedule(appender);
  }

  /** Commits everything queued now (before the database closes). */
  drainAll(appender: SqliteAppender): void {
    while (this.#queue.length > 0) this.#drain(appender);
  }

  #schedule(appender: SqliteAppender): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#drain(appender);
    });
  }

  #drain(appender: SqliteAppender): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    const size = Math.max(16, Math.floor(commitBudgetMs / this.#perAppendMs));
    const batch = queue.length <= size ? queue : queue.slice(0, size);
    this.#queue = queue.length <= size ? [] : queue.slice(size);
    const started = performance.now();
    try {
      appender.commit(batch);
    } catch {
      // Every append of the batch carries the error as its outcome.
    }
    this.#perAppendMs =
      0.8 * this.#perAppendMs + (0.2 * (performance.now() - started)) / batch.length;
    for (const append of batch) {
      const outcome = append.outcome!;
      if ("error" in outcome) append.reject(outcome.error);
      else append.resolve({ nextSeq: outcome.nextSeq });
    }
    if (this.#queue.length > 0) this.#schedule(appender);
  }
}
