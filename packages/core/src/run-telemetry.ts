import type { StoredEvent } from "./contracts/event-store.js";
import type { Exporter } from "./contracts/exporter.js";
import type { Redactor } from "./contracts/redactor.js";
import { InvalidArgumentError } from "./errors.js";
import {
  type ExportQueue,
  type ExportQueueOptions,
  exportQueueOf,
  forgetExportQueue,
} from "./export-queue.js";
import type { RunFold } from "./fold.js";
import { type Span, SpanBuilder, type SpanBuilderOptions, type SpanEvent } from "./spans.js";

/** Where a run's events go once durable: exporters (as spans) and the host's `onEvent`. */
export interface TelemetryOptions {
  exporters: readonly Exporter[];
  redact: Redactor | undefined;
  onEvent: ((event: StoredEvent) => void) | undefined;
  reportError: (error: unknown, where: string) => void;
  /** Settings of each exporter's background queue (made by the first agent that uses it). */
  queue?: ExportQueueOptions | undefined;
}

/** Default deadline of `agent.shutdown()`: the OTLP exporter's own default timeout. */
export const defaultShutdownDeadlineMs = 10_000;

/** The telemetry of one run: its span builder and the hook its writer calls per event. */
export interface RunTelemetry {
  /** Present when some exporter listens. */
  readonly spans: SpanBuilder | undefined;
  onApplied(event: StoredEvent, fold: RunFold): void;
}

/**
 * The agent's outward channels. Exporters and `onEvent` fail open: their errors go to
 * `reportError` and never reach the run. Spans go to each exporter through its background
 * queue (bounded, with a circuit breaker): no run waits on an exporter; `shutdown` does, up to
 * its deadline.
 */
export class Telemetry {
  readonly #options: TelemetryOptions;
  /** When no exporter sends message content, drop it before redaction: it is most of a span. */
  readonly #contentWanted: boolean;
  readonly #queues: ExportQueue[];
  #shutdown: Promise<ShutdownReport> | undefined;

  constructor(options: TelemetryOptions) {
    this.#options = options;
    this.#contentWanted = options.exporters.some((exporter) => exporter.captureContent !== false);
    this.#queues = options.exporters.map((exporter) => exportQueueOf(exporter, options.queue));
  }

  /** Whether any exporter listens (the span builder is skipped otherwise). */
  get exporting(): boolean {
    return this.#options.exporters.length > 0;
  }

  /** The telemetry of one run. */
  forRun(runId: string, options: SpanBuilderOptions = {}): RunTelemetry {
    const spans = this.exporting ? new SpanBuilder(runId, options) : undefined;
    const { onEvent, redact, reportError } = this.#options;
    return {
      spans,
      onApplied: (event, fold) => {
        if (spans) {
          try {
            this.#export(spans.push(event, fold.messages));
          } catch (error) {
            reportError(error, "span builder");
          }
        }
        if (onEvent) {
          try {
            onEvent((redact ? redact(event) : event) as StoredEvent);
          } catch (error) {
            reportError(error, "onEvent");
          }
        }
      },
    };
  }

  #export(spans: Span[]): void {
    const { redact, reportError } = this.#options;
    if (spans.length === 0 || this.#queues.length === 0) return;
    const shaped = this.#contentWanted ? spans : spans.map(withoutContent);
    const redacted = redact ? shaped.map((span) => redactSpan(span, redact)) : shaped;
    for (const queue of this.#queues) queue.push(redacted, reportError);
  }

  /**
   * Asks every exporter to flush, in the background after what is queued: a run's end never
   * waits for a collector. Failures are reported, never thrown.
   */
  requestFlush(): void {
    for (const queue of this.#queues) queue.requestFlush(this.#options.reportError);
  }

  /**
   * Sends what is queued, then flushes and shuts down every exporter, all within `deadlineMs`;
   * what could not be sent by then is counted, reported and dropped. Never throws; safe to call
   * twice (the second call waits for the first).
   */
  shutdown(deadlineMs: number = defaultShutdownDeadlineMs): Promise<ShutdownReport> {
    // Deadlines run on the real clock, whatever clock the agent's runs use.
    this.#shutdown ??= shutdownQueues(
      this.#queues,
      deadlineMs,
      this.#options.reportError,
      Date.now,
    );
    return this.#shutdown;
  }
}

/**
 * Sends what waits in these exporters' queues, then flushes and shuts them down, within the
 * deadline. For hosts of `withRun` (whose runs never wait for export): call it on exit.
 *
 * @example
 * process.on("SIGTERM", () => shutdownExporters([exporter], { deadlineMs: 5_000 }));
 */
export async function shutdownExporters(
  exporters: readonly Exporter[],
  options: { deadlineMs?: number; onError?: (error: unknown, where: string) => void } = {},
): Promise<ShutdownReport> {
  const report = (error: unknown, where: string) => {
    try {
      options.onError?.(error, where);
    } catch {
      // nowhere left to report
    }
  };
  return shutdownQueues(
    exporters.map((exporter) => exportQueueOf(exporter, undefined)),
    checkDeadline(options.deadlineMs ?? defaultShutdownDeadlineMs, "shutdownExporters"),
    report,
    Date.now,
  );
}

/** What a shutdown did, per exporter and in all. */
export interface ShutdownReport {
  /**
   * Spans dropped in all: by core's queues (full, breaker open, cut off by the deadline) and by
   * the exporters themselves (accepted, never delivered, as their `shutdown` reports). Always a
   * count; 0 when everything was delivered.
   */
  dropped: number;
  exporters: ExporterShutdownReport[];
}

/** One exporter's part of a {@link ShutdownReport}. */
export interface ExporterShutdownReport {
  name: string;
  /** Spans this exporter lost, core's queue and the exporter together. */
  dropped: number;
  /** Whether its flush and shutdown finished before the deadline. */
  finished: boolean;
}

/** Checks a shutdown deadline: a finite number of milliseconds above 0. */
export function checkDeadline(deadlineMs: unknown, where: string): number {
  if (typeof deadlineMs !== "number" || !Number.isFinite(deadlineMs) || deadlineMs <= 0)
    throw new InvalidArgumentError(
      `[core] ${where}({ deadlineMs }): deadlineMs must be a finite number of milliseconds above 0 (default ${defaultShutdownDeadlineMs}), got ${String(deadlineMs)}`,
    );
  return deadlineMs;
}

async function shutdownQueues(
  queues: readonly ExportQueue[],
  deadlineMs: number,
  report: (error: unknown, where: string) => void,
  now: () => number,
): Promise<ShutdownReport> {
  const deadline = now() + deadlineMs;
  const exporters = await Promise.all(
    queues.map((queue) => shutdownQueue(queue, deadline, deadlineMs, report, now)),
  );
  return { dropped: exporters.reduce((sum, item) => sum + item.dropped, 0), exporters };
}

/** Drains one exporter's queue, then flushes and shuts the exporter down, by the deadline. */
async function shutdownQueue(
  queue: ExportQueue,
  deadline: number,
  deadlineMs: number,
  report: (error: unknown, where: string) => void,
  now: () => number,
): Promise<ExporterShutdownReport> {
  const { exporter } = queue;
  const where = `exporter ${exporter.name}`;
  await queue.drain(deadline);
  queue.close(report);
  forgetExportQueue(exporter);
  let ownDropped = 0;
  const closing = (async () => {
    // A queue whose breaker is open knows the collector is down: no flush to wait for.
    if (!queue.open) {
      try {
        await exporter.forceFlush?.();
      } catch (error) {
        report(error, where);
      }
    }
    try {
      const outcome = await exporter.shutdown({ deadlineMs: Math.max(1, deadline - now()) });
      if (outcome && Number.isSafeInteger(outcome.dropped) && outcome.dropped > 0)
        ownDropped = outcome.dropped;
    } catch (error) {
      report(error, where);
    }
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = await Promise.race([
    closing.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), Math.max(0, deadline - now()));
      timer.unref?.();
    }),
  ]);
  clearTimeout(timer);
  if (late)
    report(
      new Error(
        `[core] shutdown: exporter "${exporter.name}" did not finish flushing within ${deadlineMs} ms; what it still held is lost (raise the deadline: agent.shutdown({ deadlineMs }))`,
      ),
      where,
    );
  return { name: exporter.name, dropped: queue.dropped + ownDropped, finished: !late };
}

function withoutContent(span: Span): Span {
  const { content: _content, ...rest } = span;
  return rest;
}

/** What of a span the redactor sees: everything a run's data can reach. */
interface SpanText {
  name: string;
  statusMessage?: string;
  attributes: Span["attributes"];
  events: Array<{ name: string; attributes: SpanEvent["attributes"] }>;
  content?: Span["content"];
}

/**
 * Redacts what a span can carry from the run (name, status message, attributes, event names
 * and attributes, content). Ids, times, kind and status are core's own (hex digests, numbers,
 * fixed words): they never hold a run's data, the redactor does not walk them (most of a
 * span's strings that change every step, so a redactor's cache never holds them), and a trace
 * keeps its ids whatever a redactor makes of a hex string.
 */
function redactSpan(span: Span, redact: Redactor): Span {
  try {
    const text: SpanText = {
      name: span.name,
      attributes: span.attributes,
      events: span.events.map((event) => ({ name: event.name, attributes: event.attributes })),
      ...(span.statusMessage !== undefined ? { statusMessage: span.statusMessage } : {}),
      ...(span.content !== undefined ? { content: span.content } : {}),
    };
    const redacted = redact(text) as SpanText;
    const out: Span = {
      traceId: span.traceId,
      spanId: span.spanId,
      ...(span.parentSpanId !== undefined ? { parentSpanId: span.parentSpanId } : {}),
      kind: span.kind,
      name: String(redacted.name),
      startTime: span.startTime,
      endTime: span.endTime,
      status: span.status,
      attributes: redacted.attributes,
      events: redacted.events.map((event, index) => ({
        name: String(event.name),
        time: span.events[index]?.time ?? span.startTime,
        attributes: event.attributes,
      })),
    };
    if (redacted.statusMessage !== undefined) out.statusMessage = String(redacted.statusMessage);
    if (redacted.content !== undefined) out.content = redacted.content;
    return out;
  } catch {
    // A redactor that fails must not leak: drop content and string attributes.
    const attributes: Span["attributes"] = {};
    for (const [key, value] of Object.entries(span.attributes))
      if (typeof value !== "string") attributes[key] = value;
    return { ...span, attributes, events: [], content: {} };
  }
}
