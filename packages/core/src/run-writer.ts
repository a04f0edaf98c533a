import type { EventStore, StoredEvent, StoredEventInput } from "./contracts/event-store.js";
import type { RunEvent } from "./events.js";
import { RunFold } from "./fold.js";
import { nextRunOrder } from "./yield-if-busy.js";

/** What a run writer needs besides the store. */
export interface RunWriterOptions {
  /** The clock that stamps `at`. */
  now: () => number;
  /** Reveals vault tokens for the run state gates read (see `RunFold`). */
  reveal?: (text: string) => string;
  /** Called with every event once it is durable and folded (traces, `onEvent`); must not throw. */
  onApplied?: (event: StoredEvent, fold: RunFold) => void;
}

/**
 * Serialises the appends of one run, batching events that arrive while a write is in flight,
 * and folds every durable event into the run (`fold`). After one failed append the writer is
 * broken: every later write rejects with the same error, so no action follows an unrecorded one.
 */
export class RunWriter {
  readonly runId: string;
  /** This run's place in line when runs wait for a turn of the event loop (see `yieldIfBusy`). */
  readonly order = nextRunOrder();
  /** The seq the next appended event gets. */
  nextSeq: number;
  readonly #store: EventStore;
  readonly #options: RunWriterOptions;
  #fold: RunFold | undefined;
  /** Events waiting to be appended, and one settle callback per `write` call. */
  #queue: StoredEventInput[] = [];
  #waiters: Array<{ resolve: () => void; reject: (error: unknown) => void; last: number }> = [];
  /** Events queued since the writer was made: `last` of a waiter counts in these. */
  #queued = 0;
  #flushing = false;
  #broken: unknown;

  /** A writer for a new run (`fold` absent, the first write is its `run-start`) or a stored one. */
  constructor(
    store: EventStore,
    runId: string,
    nextSeq: number,
    options: RunWriterOptions,
    fold?: RunFold,
  ) {
    this.#store = store;
    this.runId = runId;
    this.nextSeq = nextSeq;
    this.#options = options;
    this.#fold = fold;
  }

  /** The run as folded from every durable event; there is none before `run-start` is durable. */
  get fold(): RunFold {
    if (!this.#fold) throw new Error(`[core] run ${this.runId} has no run-start yet (a bug)`);
    return this.#fold;
  }

  /** The error of the append that broke the writer, if one did. */
  get broken(): unknown {
    return this.#broken;
  }

  /**
   * Confirms with the store that this writer still owns the run (`EventStore.confirmOwner`,
   * one round trip; nothing when the store cannot tell), after every write so far is durable.
   * A refusal breaks the writer like a failed append: the run takes no further action.
   * `undefined` (no promise, nothing to wait for) when the writer is sound and the store cannot
   * tell; a broken writer rejects.
   */
  confirmOwner(): Promise<void> | undefined {
    if (this.#broken) return Promise.reject(this.#broken);
    if (!this.#store.confirmOwner) return undefined;
    return this.#confirmOwner();
  }

  async #confirmOwner(): Promise<void> {
    try {
      await this.#store.confirmOwner!(this.runId);
    } catch (error) {
      this.#broken ??= error;
      throw error;
    }
  }

  /**
   * Resolves once every given event is durable and applied; one promise per call. The events
   * become the log's: the caller must not change them afterwards.
   */
  write(...events: RunEvent[]): Promise<void> {
    if (this.#broken) return Promise.reject(this.#broken);
    const now = this.#options.now;
    // The loop hands over events it made for this write and keeps no other reference: `at` and
    // later `seq` are set on them in place, and the same objects become the fold's (no copies).
    for (const event of events) {
      (event as StoredEventInput).at = now();
      this.#queue.push(event as StoredEventInput);
    }
    this.#queued += events.length;
    const last = this.#queued;
    const done = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject, last });
    });
    if (!this.#flushing) void this.#flush();
    return done;
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    let appended = this.#queued - this.#queue.length;
    while (this.#queue.length > 0) {
      const batch = this.#queue;
      this.#queue = [];
      try {
        if (this.#broken) throw this.#broken;
        const expectedSeq = this.nextSeq;
        await this.#store.append(this.runId, batch, { expectedSeq });
        this.nextSeq = expectedSeq + batch.length;
        for (let index = 0; index < batch.length; index += 1) {
          const event = batch[index] as StoredEvent;
          event.seq = expectedSeq + index;
          this.#apply(event);
        }
        appended += batch.length;
        // A write resolves when its last event is in: every write wholly in this batch.
        let settled = 0;
        while (settled < this.#waiters.length && this.#waiters[settled]!.last <= appended)
          settled += 1;
        for (const waiter of this.#waiters.splice(0, settled)) waiter.resolve();
      } catch (error) {
        this.#broken ??= error;
        this.#queue = [];
        for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
      }
    }
    this.#flushing = false;
  }

  #apply(event: StoredEvent): void {
    let fold = this.#fold;
    if (event.type === "run-start") {
      fold = new RunFold(
        event,
        `run ${this.runId}`,
        this.#options.reveal ? { reveal: this.#options.reveal } : {},
      );
      this.#fold = fold;
    } else fold!.apply(event);
    this.#options.onApplied?.(event, fold!);
  }
}
