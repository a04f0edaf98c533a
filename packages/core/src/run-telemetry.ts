import type { StoredEvent } from "./contracts/event-store.js";
import type { Exporter } from "./contracts/exporter.js";
import type { Redactor } from "./contracts/redactor.js";
import type { RunFold } from "./fold.js";
import { type Span, SpanBuilder } from "./spans.js";

/** Where a run's events go once durable: exporters (as spans) and the host's `onEvent`. */
export interface TelemetryOptions {
  exporters: readonly Exporter[];
  redact: Redactor | undefined;
  onEvent: ((event: StoredEvent) => void) | undefined;
  reportError: (error: unknown, where: string) => void;
}

/** The telemetry of one run: its span builder and the hook its writer calls per event. */
export interface RunTelemetry {
  /** Present when some exporter listens. */
  readonly spans: SpanBuilder | undefined;
  onApplied(event: StoredEvent, fold: RunFold): void;
}

/**
 * The agent's outward channels. Exporters and `onEvent` fail open: their errors go to
 * `reportError` and never reach the run.
 */
export class Telemetry {
  readonly #options: TelemetryOptions;
  /** When no exporter sends message content, drop it before redaction: it is most of a span. */
  readonly #contentWanted: boolean;

  constructor(options: TelemetryOptions) {
    this.#options = options;
    this.#contentWanted = options.exporters.some((exporter) => exporter.captureContent !== false);
  }

  /** Whether any exporter listens (the span builder is skipped otherwise). */
  get exporting(): boolean {
    return this.#options.exporters.length > 0;
  }

  /** The telemetry of one run. */
  forRun(runId: string): RunTelemetry {
    const spans = this.exporting ? new SpanBuilder(runId) : undefined;
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
    const { exporters, redact, reportError } = this.#options;
    if (spans.length === 0 || exporters.length === 0) return;
    const shaped = this.#contentWanted ? spans : spans.map(withoutContent);
    const redacted = redact ? shaped.map((span) => redactSpan(span, redact)) : shaped;
    for (const exporter of exporters) {
      try {
        Promise.resolve(exporter.export(redacted)).then(
          (result) => {
            if (result && result.code === "failed")
              reportError(result.error, `exporter ${exporter.name}`);
          },
          (error) => reportError(error, `exporter ${exporter.name}`),
        );
      } catch (error) {
        reportError(error, `exporter ${exporter.name}`);
      }
    }
  }

  /** Asks every exporter to flush; failures are reported, never thrown. */
  async flush(): Promise<void> {
    const { exporters, reportError } = this.#options;
    await Promise.all(
      exporters.map((exporter) =>
        exporter
          .forceFlush?.()
          .catch((error: unknown) => reportError(error, `exporter ${exporter.name}`)),
      ),
    );
  }

  /** Flushes and shuts down every exporter; failures are reported, never thrown. */
  async shutdown(): Promise<void> {
    const { exporters, reportError } = this.#options;
    await Promise.all(
      exporters.map(async (exporter) => {
        try {
          await exporter.forceFlush?.();
          await exporter.shutdown();
        } catch (error) {
          reportError(error, `exporter ${exporter.name}`);
        }
      }),
    );
  }
}

function withoutContent(span: Span): Span {
  const { content: _content, ...rest } = span;
  return rest;
}

function redactSpan(span: Span, redact: Redactor): Span {
  try {
    return redact(span) as Span;
  } catch {
    // A redactor that fails must not leak: drop content and string attributes.
    const attributes: Span["attributes"] = {};
    for (const [key, value] of Object.entries(span.attributes))
      if (typeof value !== "string") attributes[key] = value;
    return { ...span, attributes, events: [], content: {} };
  }
}
