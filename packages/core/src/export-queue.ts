import type { Exporter, ExportResult } from "./contracts/exporter.js";
import type { Span } from "./contracts/span.js";
import { ExportDroppedError, InvalidArgumentError } from "./errors.js";

/**
 * How spans travel to one exporter: a bounded queue sent in the background, one send at a
 * time, with a circuit breaker. No run ever waits on it; `agent.shutdown()` does, up to its
 * deadline.
 */
export interface ExportQueueOptions {
  /** Spans that may wait for one exporter; past it new batches are dropped (and counted). Default 4096. */
  maxQueuedSpans?: number;
  /** How long one send (`export` or `forceFlush`) may take before it counts as failed. Default 10 000 ms. */
  timeoutMs?: number;
  /** Failed sends in a row that open the breaker (spans are dropped, not queued). Default 3. */
  breakAfter?: number;
  /** While the breaker is open, how long until one batch is let through as a probe. Default 5 000 ms (doubling up to 60 000). */
  probeAfterMs?: number;
}

/** Where an item's problems are reported (each agent or withRun brings its own `onError`). */
type Report = (error: unknown, where: string) => void;

type Item =
  | { kind: "spans"; spans: readonly Span[]; report: Report }
  | { kind: "flush"; report: Report };

const defaults = {
  maxQueuedSpans: 4096,
  timeoutMs: 10_000,
  breakAfter: 3,
  probeAfterMs: 5_000,
};
const maxProbeAfterMs = 60_000;
/** Drops are reported at most this often (the count since the last report goes with it). */
const dropReportEveryMs = 1_000;

/** Checks queue settings, naming the bad one. */
export function validateExportQueueOptions(options: unknown, where: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      `${where}: exportQueue must be an object, got ${String(options)}`,
    );
  for (const key of ["maxQueuedSpans", "timeoutMs", "breakAfter", "probeAfterMs"] as const) {
    const value = (options as Record<string, unknown>)[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
      throw new InvalidArgumentError(
        `${where}: exportQueue.${key} must be a positive integer, got ${String(value)}`,
      );
  }
}

/**
 * The background channel to one exporter. One per exporter object (shared by every agent and
 * `withRun` that uses it), so the breaker's memory of a down collector is shared too.
 */
export class ExportQueue {
  readonly exporter: Exporter;
  readonly #options: Required<ExportQueueOptions>;
  readonly #now: () => number;
  readonly #items: Item[] = [];
  #queuedSpans = 0;
  #inFlight = false;
  #failuresInARow = 0;
  #openUntil = 0;
  #open = false;
  #probeAfterMs: number;
  #closed = false;
  #dropped = 0;
  #unreportedDrops = 0;
  #lastDropReport = Number.NEGATIVE_INFINITY;
  #idle: Array<() => void> = [];

  constructor(exporter: Exporter, options: ExportQueueOptions = {}, now: () => number = Date.now) {
    this.exporter = exporter;
    this.#options = { ...defaults, ...stripUndefined(options) };
    this.#probeAfterMs = this.#options.probeAfterMs;
    this.#now = now;
  }

  /** Spans dropped so far (a failed send, queue full, breaker open, or after shutdown). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Spans waiting to be sent. */
  get queued(): number {
    return this.#queuedSpans;
  }

  /** Whether the breaker is open (the exporter refused its last sends). */
  get open(): boolean {
    return this.#open;
  }

  /** Hands spans over; never waits and never throws. */
  push(spans: readonly Span[], report: Report): void {
    if (spans.length === 0) return;
    const refused = this.#refusal(spans.length);
    if (refused) {
      this.#drop(spans.length, report, refused);
      return;
    }
    this.#items.push({ kind: "spans", spans, report });
    this.#queuedSpans += spans.length;
    this.#pump();
  }

  /** Why a batch of this size cannot be queued now, if it cannot. */
  #refusal(count: number): string | undefined {
    if (this.#closed) return "the agent was shut down";
    // With the breaker open, one batch goes through as the probe once the wait is over.
    if (this.#open)
      return this.#now() < this.#openUntil || this.#inFlight || this.#items.length > 0
        ? "its breaker is open"
        : undefined;
    return this.#queuedSpans + count > this.#options.maxQueuedSpans
      ? "its queue is full"
      : undefined;
  }

  /** Asks the exporter to flush in the background (after what is queued); coalesced. */
  requestFlush(report: Report): void {
    if (this.#closed || !this.exporter.forceFlush || this.#open) return;
    if (this.#items.at(-1)?.kind === "flush") return;
    this.#items.push({ kind: "flush", report });
    this.#pump();
  }

  /**
   * Waits until everything queued was sent (or given up on), the breaker opens (the exporter is
   * known down), or the deadline passes; `true` when the queue is empty.
   */
  async drain(deadline: number): Promise<boolean> {
    while (this.#inFlight || this.#items.length > 0) {
      // Known down (the breaker is open): what waits would only wait for a dead collector.
      if (this.#open) return false;
      const left = deadline - this.#now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#idle.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return true;
  }

  /** Stops taking spans; what still waits is counted as dropped and reported. */
  close(report: Report): void {
    if (this.#closed) return;
    this.#closed = true;
    const left = this.#queuedSpans;
    this.#items.length = 0;
    this.#queuedSpans = 0;
    if (left > 0) {
      this.#dropped += left;
      this.#unreportedDrops += left;
    }
    this.#reportDrops(report, "not sent before the shutdown deadline", true);
  }

  #drop(count: number, report: Report, why: string): void {
    this.#dropped += count;
    this.#unreportedDrops += count;
    this.#reportDrops(report, why, false);
  }

  #reportDrops(report: Report, why: string, always: boolean): void {
    if (this.#unreportedDrops === 0) return;
    const now = this.#now();
    if (!always && now - this.#lastDropReport < dropReportEveryMs) return;
    this.#lastDropReport = now;
    const count = this.#unreportedDrops;
    this.#unreportedDrops = 0;
    safely(
      report,
      new ExportDroppedError(
        count,
        this.#dropped,
        `[core] exporter "${this.exporter.name}": dropped ${count} span(s) (${this.#dropped} in all) because ${why}; runs are unaffected. ${adviceFor(why)}`,
      ),
      `exporter ${this.exporter.name}`,
    );
  }

  #pump(): void {
    while (!this.#inFlight && this.#items.length > 0) {
      const item = this.#items.shift() as Item;
      if (item.kind === "spans") this.#queuedSpans -= item.spans.length;
      let outcome: Promise<ExportResult | undefined> | ExportResult | undefined;
      try {
        outcome =
          item.kind === "spans"
            ? this.exporter.export(item.spans)
            : (this.exporter.forceFlush?.().then(() => undefined) ?? undefined);
      } catch (error) {
        this.#settle(item, { code: "failed", error: asError(error) });
        continue;
      }
      if (!isPromise(outcome)) {
        // A synchronous exporter (a recorder, a batching processor) is done already.
        this.#settle(item, outcome);
        continue;
      }
      this.#inFlight = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<ExportResult>((resolve) => {
        timer = setTimeout(
          () =>
            resolve({
              code: "failed",
              error: new Error(
                `[core] exporter "${this.exporter.name}" did not answer within ${this.#options.timeoutMs} ms (exportQueue.timeoutMs)`,
              ),
            }),
          this.#options.timeoutMs,
        );
        timer.unref?.();
      });
      Promise.race([
        outcome.then(
          (result) => result,
          (error: unknown): ExportResult => ({ code: "failed", error: asError(error) }),
        ),
        timedOut,
      ]).then((result) => {
        clearTimeout(timer);
        this.#inFlight = false;
        this.#settle(item, result);
        this.#pump();
      });
      return;
    }
    if (!this.#inFlight && this.#items.length === 0) {
      const waiting = this.#idle.splice(0);
      for (const wake of waiting) wake();
    }
  }

  #settle(item: Item, result: ExportResult | undefined): void {
    const where = `exporter ${this.exporter.name}`;
    if (result?.code !== "failed") {
      if (this.#open) {
        this.#open = false;
        this.#probeAfterMs = this.#options.probeAfterMs;
        this.#reportDrops(item.report, "its breaker was open", true);
      }
      this.#failuresInARow = 0;
      return;
    }
    safely(item.report, result.error, where);
    // The batch is lost: counted (the failure itself was just reported).
    if (item.kind === "spans") this.#dropped += item.spans.length;
    this.#failuresInARow += 1;
    if (this.#open) {
      // The probe failed: wait longer before the next one.
      this.#probeAfterMs = Math.min(this.#probeAfterMs * 2, maxProbeAfterMs);
      this.#openUntil = this.#now() + this.#probeAfterMs;
      this.#dropQueued(item.report);
    } else if (this.#failuresInARow >= this.#options.breakAfter) {
      this.#open = true;
      this.#openUntil = this.#now() + this.#probeAfterMs;
      safely(
        item.report,
        new ExportDroppedError(
          0,
          this.#dropped,
          `[core] exporter "${this.exporter.name}" failed ${this.#failuresInARow} sends in a row: its spans are dropped (counted) until a probe succeeds, one batch every ${this.#probeAfterMs} ms or more`,
        ),
        where,
      );
      this.#dropQueued(item.report);
    }
  }

  /** With the breaker open, what waits would only wait for a collector that is down. */
  #dropQueued(report: Report): void {
    const spans = this.#queuedSpans;
    this.#items.length = 0;
    this.#queuedSpans = 0;
    if (spans > 0) this.#drop(spans, report, "its breaker is open");
  }
}

const queues = new WeakMap<Exporter, ExportQueue>();

/** The queue of an exporter, made on first use with these settings. */
export function exportQueueOf(
  exporter: Exporter,
  options: ExportQueueOptions | undefined,
  now?: () => number,
): ExportQueue {
  let queue = queues.get(exporter);
  if (!queue) {
    queue = new ExportQueue(exporter, options, now);
    queues.set(exporter, queue);
  }
  return queue;
}

/** Forgets an exporter's queue (after its shutdown, so a new agent starts afresh). */
export function forgetExportQueue(exporter: Exporter): void {
  queues.delete(exporter);
}

function adviceFor(why: string): string {
  if (why.includes("queue is full"))
    return "The collector is slower than the runs: check it, or raise exportQueue.maxQueuedSpans";
  if (why.includes("shut"))
    return "Give shutdown more time: agent.shutdown({ deadlineMs }) or shutdownDeadlineMs";
  return "Check that the collector is reachable (the breaker closes after a probe succeeds)";
}

function isPromise<T>(value: unknown): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === "function";
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function safely(report: Report, error: unknown, where: string): void {
  try {
    report(error, where);
  } catch {
    // the report hook failed: nowhere left to report
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, item]) => item !== undefined),
  ) as Partial<T>;
}
