/**
 * The Exporter contract: sends finished spans somewhere (a file, OTLP, a test recorder).
 *
 * Failure rule: exporters fail open. They never throw into the run: a rejected or thrown
 * `export` is reported to the agent's `onError` hook and the run goes on.
 */
import type { Span } from "./span.js";

/** What one export did. */
export type ExportResult = { code: "success" } | { code: "failed"; error: Error };

/**
 * An exporter of spans.
 *
 * Fails open: errors go to `onError`, never into the run.
 */
export interface Exporter {
  readonly name: string;
  /**
   * Whether this exporter sends message content (`span.content`). `false` lets the runtime
   * drop content before redaction (it is most of a span's size); leave it out to get content.
   */
  readonly captureContent?: boolean;
  /**
   * Whether this exporter redacts message content itself before sending it (for example
   * `otelExporter({ captureContent: true, redact })`). An agent refuses an exporter that
   * declares `captureContent: true` unless the agent has `redact`, or the exporter this flag.
   */
  readonly redactsContent?: boolean;
  /** Exports a batch of finished, already redacted spans. */
  export(spans: readonly Span[]): Promise<ExportResult> | ExportResult;
  /** Flushes anything buffered; optional. */
  forceFlush?(): Promise<void>;
  /**
   * Flushes and releases resources; safe to call twice. Core passes what is left of the
   * shutdown deadline; an exporter that knows its collector is down returns at once. It may
   * resolve with how many spans it took but never delivered (`dropped`), which
   * `agent.shutdown()` adds to its report.
   */
  shutdown(options?: { deadlineMs?: number }): Promise<void | ExporterShutdown>;
}

/** What an exporter's `shutdown` may report. */
export interface ExporterShutdown {
  /** Spans it accepted (from `export`) and never delivered: failed, refused, or cut off. */
  dropped: number;
}
