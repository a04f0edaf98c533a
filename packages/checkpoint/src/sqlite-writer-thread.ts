import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { sqliteWriterSource } from "./sqlite-writer-source.js";
import { StoreWriteError } from "./store-errors.js";

/** One append as the writer thread commits it: rows built on the main thread, re-checked there. */
export interface WriterItem {
  runId: string;
  expectedSeq: number;
  /** The chain value of the log's last event the rows link from (`null`: none, or no chain). */
  previousHead: string | null;
  /** The rows to insert; absent when the main thread saw another length (check the fence only). */
  rows?: Array<{ seq: number; at: number; type: string; body: string; chain: string | null }>;
  /** The run's `loopguard_runs` row after the append (absent for an empty append). */
  run?: {
    agentId: string | null;
    status: string;
    updatedAt: number;
    summary: string;
    head: string | null;
  };
}

/** What the writer thread says of one append. */
export type WriterOutcome =
  | { kind: "ok"; nextSeq: number }
  | { kind: "conflict"; length: number }
  | { kind: "stale" };

type Answer =
  | { type: "ready" }
  | { type: "committed"; id: number; outcomes: WriterOutcome[] }
  | { type: "failed"; id: number; error: { message: string; code?: string } };

/**
 * The SQLite store's writer thread, seen from the main thread: `commit` posts a batch and
 * resolves with one outcome per append once its transaction was fsynced, or rejects with
 * `StoreWriteError` (the transaction failed and rolled back, or the thread stopped). The
 * thread keeps the process alive only while a batch is in flight; `close` lets it finish,
 * closes its connection and waits for it to exit. Once the thread has stopped for any other
 * reason, every commit rejects, naming why.
 */
export class SqliteWriterThread {
  readonly #worker: Worker;
  readonly #where: string;
  readonly #pending = new Map<
    number,
    { resolve: (outcomes: WriterOutcome[]) => void; reject: (error: unknown) => void }
  >();
  #nextId = 0;
  #stopped: StoreWriteError | undefined;
  #closing = false;
  readonly #exited: Promise<void>;

  constructor(file: string, where: string, busyTimeoutMs: number, driver?: string) {
    this.#where = where;
    const resolved = driver ?? createRequire(import.meta.url).resolve("better-sqlite3");
    this.#worker = new Worker(sqliteWriterSource, {
      eval: true,
      workerData: { driver: resolved, file, busyTimeoutMs },
    });
    this.#worker.unref();
    this.#worker.on("message", (answer: Answer) => this.#answer(answer));
    this.#worker.on("error", (error: Error) => this.#stop(`it threw: ${error.message}`, error));
    this.#exited = new Promise((resolve) => {
      this.#worker.once("exit", (code: number) => {
        this.#stop(`it exited with code ${code}`);
        resolve();
      });
    });
  }

  /** Commits `items` in one transaction on the writer thread. */
  commit(items: WriterItem[]): Promise<WriterOutcome[]> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise<WriterOutcome[]>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      // One string: cloning it costs far less of the event loop than cloning the rows one by one.
      this.#worker.postMessage({ type: "commit", id, items: JSON.stringify(items) });
    });
  }

  /** Lets the thread finish what it was sent, closes its connection and waits for it to exit. */
  async close(): Promise<void> {
    this.#closing = true;
    if (!this.#stopped) this.#worker.postMessage({ type: "close" });
    this.#worker.ref();
    await this.#exited;
  }

  /** Stops the thread at once (what a crash of the thread does); pending commits reject. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
    await this.#exited;
  }

  #answer(answer: Answer): void {
    if (answer.type === "ready") return;
    const waiting = this.#pending.get(answer.id);
    if (!waiting) return;
    this.#pending.delete(answer.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (answer.type === "committed") waiting.resolve(answer.outcomes);
    else {
      const cause = Object.assign(new Error(answer.error.message), { code: answer.error.code });
      waiting.reject(
        new StoreWriteError(
          `[checkpoint] the commit to ${this.#where} failed (${answer.error.message}) and rolled back: none of its appends is in the log; append again with the same expectedSeq once the cause is fixed`,
          { cause },
        ),
      );
    }
  }

  #stop(reason: string, cause?: unknown): void {
    if (this.#stopped) return;
    const expected = this.#closing && cause === undefined;
    this.#stopped = new StoreWriteError(
      expected
        ? `[checkpoint] the SQLite writer thread of ${this.#where} was closed: open the store again to append`
        : `[checkpoint] the SQLite writer thread of ${this.#where} stopped (${reason}): an append it had not confirmed may or may not be in the log; read the run before appending again, and open the store again to write`,
      cause === undefined ? undefined : { cause },
    );
    this.#worker.unref();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const waiting of pending) waiting.reject(this.#stopped);
  }
}
