/**
 * What one exporter knows of its collector: up, or down since a send failed (a refused or reset
 * connection, an HTTP error, no answer in time). Shared by the HTTP agent `otlpTracing` builds
 * (which sees a refused connection before the OTLP exporter's own retries end) and the
 * fail-fast layer of `otelExporter` (which stops waiting on a collector known down).
 */
export class CollectorHealth {
  #down = false;
  #downSince = 0;
  #lastError: Error | undefined;
  #closed = false;
  readonly #listeners = new Set<(error: Error) => void>();
  readonly #closers = new Set<() => void>();

  /** Whether the last thing heard of the collector was a failure. */
  get down(): boolean {
    return this.#down;
  }

  /** When it went down (epoch ms), 0 when up. */
  get downSince(): number {
    return this.#downSince;
  }

  /** The failure that marked it down. */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  /** Whether the exporter was shut down: no new connection is made. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Records a failure: the collector is down until a send succeeds. */
  markDown(error: Error): void {
    this.#lastError = error;
    if (!this.#down) {
      this.#down = true;
      this.#downSince = Date.now();
    }
    for (const listener of [...this.#listeners]) listener(error);
  }

  /** Records a delivered send. */
  markUp(): void {
    this.#down = false;
    this.#downSince = 0;
  }

  /** Calls `listener` each time a failure is recorded; returns the unsubscribe. */
  onDown(listener: (error: Error) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Registers what to release when the exporter shuts down (e.g. the HTTP agent's sockets). */
  onClose(closer: () => void): void {
    this.#closers.add(closer);
  }

  /** Stops every connection: nothing more is sent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const closer of this.#closers) {
      try {
        closer();
      } catch {
        // Releasing is best effort.
      }
    }
  }
}

const healthOfExporter = new WeakMap<object, CollectorHealth>();

/** The health record of a SpanExporter (made on first use; `otlpTracing` attaches its own). */
export function collectorHealthOf(exporter: object): CollectorHealth {
  let health = healthOfExporter.get(exporter);
  if (!health) {
    health = new CollectorHealth();
    healthOfExporter.set(exporter, health);
  }
  return health;
}

/** Attaches a health record to an exporter (used by `otlpTracing`). */
export function attachCollectorHealth(exporter: object, health: CollectorHealth): void {
  healthOfExporter.set(exporter, health);
}
