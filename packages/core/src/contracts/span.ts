/**
 * The Span contract: one span of a run's trace, as core hands it to exporters (the span model
 * exporters translate, e.g. to OpenTelemetry). Spans are built from the run's events, live or
 * from a stored log, with the same ids either way.
 *
 * Failure rule: building spans fails open. A span the builder cannot make is reported to
 * `onError` (`span builder`) and left out; the run goes on. Content is redacted before any
 * exporter sees it, and a redactor that throws sends the span without content.
 */

/** A span attribute value. */
export type AttributeValue = string | number | boolean | string[];

/** An event inside a span (a gate decision, a retry, an injection flag). */
export interface SpanEvent {
  name: string;
  time: number;
  attributes: Record<string, AttributeValue>;
}

/** What a span covers. */
export type SpanKind = "run" | "step" | "model" | "tool";

/**
 * One span of a run's trace. Times are milliseconds since the epoch. Ids are derived from the
 * run id and the span's place in the run, so a trace rebuilt from the log matches the live one.
 */
export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind: SpanKind;
  name: string;
  startTime: number;
  endTime: number;
  status: "ok" | "error" | "unset";
  statusMessage?: string;
  attributes: Record<string, AttributeValue>;
  events: SpanEvent[];
  /** Message content (model input and output, tool arguments and result), already redacted. */
  content?: { input?: unknown; output?: unknown };
}
