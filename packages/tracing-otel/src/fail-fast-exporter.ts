import type { ExportResult } from "@loopguard/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { CollectorHealth } from "./collector-health.js";
import { TraceExportError } from "./errors.js";

/** How the fail-fast layer decides that a collector is down, and when it tries it again. */
export interface FailFastOptions {
  /** A send with no answer for this long marks the collector down (it may still land: counted then). */
  answerWithinMs: number;
  /** While down, one batch is let through as a probe this long after the last failure (doubling to 60 000). */
  probeAfterMs: number;
}

const maxProbeAfterMs = 60_000;

interface PendingSend {
  count: number;
  settle(result: ExportResult): void;
}

/**
 * Wraps a SpanExporter so that a collector known down fails sends at once instead of holding
 * them: a send fails when the exporter says so, when `health` hears of a refused or reset
 * connection (every send in flight then fails at once), or when no answer came within
 * `answerWithinMs`. While down, batches fail at once (counted) except one probe now and then.
 * Counts what it delivered, so its owner can say how many spans never reached the collector.
 */
export class FailFastExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #health: CollectorHealth;
  readonly #options: FailFastOptions;
  readonly #failed: (error: TraceExportError) => void;
  readonly #pending = new Set<PendingSend>();
  #delivered = 0;
  #probeAfterMs: number;
  #nextProbeAt = 0;
  #closing: Promise<void> | undefined;

  constructor(
    inner: SpanExporter,
    health: CollectorHealth,
    options: FailFastOptions,
    failed: (error: TraceExportError) => void,
  ) {
    this.#inner = inner;
    this.#health = health;
    this.#options = options;
    this.#failed = failed;
    this.#probeAfterMs = options.probeAfterMs;
    // A refused connection fails every send in flight now, not after the exporter's retries.
    health.onDown((error) => {
      for (const send of [...this.#pending])
        send.settle({ code: "failed", error: downError(send.count, error) });
    });
  }

  /** Spans the collector took. */
  get delivered(): number {
    return this.#delivered;
  }

  /** Whether the collector is known down. */
  get down(): boolean {
    return this.#health.down;
  }

  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void {
    void this.send(spans).then((result) => {
      if (result.code === "success") return done({ code: 0 });
      this.#failed(result.error as TraceExportError);
      done({ code: 1, error: result.error });
    });
  }

  /** One send, as a result that never rejects and never waits on a collector known down. */
  send(spans: ReadableSpan[]): Promise<ExportResult> {
    const count = spans.length;
    if (this.#health.closed)
      return Promise.resolve({
        code: "failed",
        error: new TraceExportError(
          count,
          `[tracing-otel] ${count} span(s) not sent: the exporter was shut down`,
        ),
      });
    if (this.#health.down) {
      const now = Date.now();
      if (now >= this.#nextProbeAt) {
        // This batch is the probe, sent in the background: nothing waits on a collector known
        // down (a flush or a shutdown included). If it lands, it is counted as delivered and the
        // collector is up again; if it fails, the next probe waits longer.
        this.#nextProbeAt = now + this.#probeAfterMs;
        this.#probeAfterMs = Math.min(this.#probeAfterMs * 2, maxProbeAfterMs);
        void this.#attempt(spans);
      }
      return Promise.resolve({
        code: "failed",
        error: downError(count, this.#health.lastError),
      });
    }
    return this.#attempt(spans);
  }

  /** Sends a batch, failing it when the collector is marked down or stays silent. */
  #attempt(spans: ReadableSpan[]): Promise<ExportResult> {
    const count = spans.length;
    return new Promise<ExportResult>((resolve) => {
      let open = true;
      const entry: PendingSend = {
        count,
        settle: (result) => {
          if (!open) return;
          open = false;
          clearTimeout(timer);
          this.#pending.delete(entry);
          resolve(result);
        },
      };
      const timer = setTimeout(() => {
        const error = new Error(`no answer within ${this.#options.answerWithinMs} ms`);
        this.#health.markDown(error);
        entry.settle({ code: "failed", error: downError(count, error) });
      }, this.#options.answerWithinMs);
      timer.unref?.();
      this.#pending.add(entry);
      void sendNow(this.#inner, spans).then((result) => {
        if (result.code === "success") {
          // Late or not, the collector took them.
          this.#delivered += count;
          this.#health.markUp();
          this.#probeAfterMs = this.#options.probeAfterMs;
          this.#nextProbeAt = 0;
        } else if (open) this.#health.markDown(result.error);
        entry.settle(result);
      });
    });
  }

  /** Waits for the exporter's flush unless the collector is (or goes) down. */
  async forceFlush(): Promise<void> {
    if (this.#health.down || this.#health.closed) return;
    await untilDown(this.#health, this.#inner.forceFlush?.() ?? Promise.resolve());
  }

  /**
   * Shuts the exporter down. With the collector known down (or once it goes down) this returns
   * at once: what the exporter still holds is abandoned and its connections are closed.
   */
  shutdown(): Promise<void> {
    this.#closing ??= (async () => {
      const closing = Promise.resolve()
        .then(() => this.#inner.shutdown())
        .catch(() => undefined);
      if (!this.#health.down) await untilDown(this.#health, closing);
      for (const send of [...this.#pending])
        send.settle({
          code: "failed",
          error: downError(send.count, this.#health.lastError),
        });
      this.#health.close();
    })();
    return this.#closing;
  }
}

/** Waits for `work`, or until the collector is recorded down, whichever is first. */
function untilDown(health: CollectorHealth, work: Promise<unknown>): Promise<void> {
  return new Promise<void>((resolve) => {
    const unsubscribe = health.onDown(() => {
      unsubscribe();
      resolve();
    });
    void work.then(
      () => {
        unsubscribe();
        resolve();
      },
      () => {
        unsubscribe();
        resolve();
      },
    );
  });
}

function downError(count: number, cause: Error | undefined): TraceExportError {
  return new TraceExportError(
    count,
    `[tracing-otel] ${count} span(s) not sent: the collector is down (${cause?.message ?? "unknown error"}); check that it is reachable (OTEL_EXPORTER_OTLP_ENDPOINT); a probe is sent now and then until it answers`,
    { cause },
  );
}

/** One send to a SpanExporter, as a result that never rejects. */
export function sendNow(exporter: SpanExporter, batch: ReadableSpan[]): Promise<ExportResult> {
  const count = batch.length;
  return new Promise<ExportResult>((resolve) => {
    try {
      exporter.export(batch, (result) => {
        if (result.code === 0) resolve({ code: "success" });
        else {
          const cause = result.error;
          resolve({
            code: "failed",
            error: new TraceExportError(
              count,
              `[tracing-otel] could not send ${count} span(s) to the OpenTelemetry exporter: ${cause?.message ?? "unknown error"}; check that the collector is reachable (OTEL_EXPORTER_OTLP_ENDPOINT) and accepts the headers`,
              { cause },
            ),
          });
        }
      });
    } catch (error) {
      resolve({
        code: "failed",
        error: new TraceExportError(
          count,
          `[tracing-otel] the OpenTelemetry exporter threw: ${(error as Error)?.message ?? String(error)}`,
          { cause: error },
        ),
      });
    }
  });
}
