import { InvalidArgumentError, type Span } from "@loopguard/core";
import type { AttributeValue } from "@opentelemetry/api";
import { type ContentRedactor, genAiSpanOf } from "./gen-ai-span.js";

/** Options of `otlpJsonOf`. */
export interface OtlpJsonOptions {
  /** The resource's `service.name`. Default `loopguard` (as `otelExporter`). */
  serviceName?: string;
  /** More resource attributes (`deployment.environment`, ...). */
  resourceAttributes?: Record<string, AttributeValue>;
  /** Write message content (`gen_ai.input.messages`, ...). Default `false`. */
  captureContent?: boolean;
  /** Applied to content and status messages (as `otelExporter({ redact })`). */
  redact?: ContentRedactor;
}

/** An OTLP/JSON `AnyValue`. */
export type OtlpJsonValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: OtlpJsonValue[] } };

/** An OTLP/JSON `KeyValue`. */
export interface OtlpJsonAttribute {
  key: string;
  value: OtlpJsonValue;
}

/** One span in OTLP/JSON. */
export interface OtlpJsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP `SpanKind`: 1 INTERNAL, 3 CLIENT. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpJsonAttribute[];
  events: Array<{ timeUnixNano: string; name: string; attributes: OtlpJsonAttribute[] }>;
  /** OTLP `StatusCode`: 0 UNSET, 1 OK, 2 ERROR. */
  status: { code: number; message?: string };
}

/** An `ExportTraceServiceRequest` in OTLP/JSON: what `/v1/traces` takes as `application/json`. */
export interface OtlpJsonTrace {
  resourceSpans: Array<{
    resource: { attributes: OtlpJsonAttribute[] };
    scopeSpans: Array<{ scope: { name: string }; spans: OtlpJsonSpan[] }>;
  }>;
}

const scopeName = "@loopguard/tracing-otel";

/**
 * Writes loopguard spans as an OTLP/JSON trace (`{ resourceSpans: [...] }`, the JSON encoding
 * of an `ExportTraceServiceRequest`): the same names, kinds, ids, parents, times, attributes,
 * events and status `otelExporter` sends over OTLP/HTTP protobuf, with ids as hex and times as
 * decimal nanosecond strings, as the OTLP/JSON rules ask. A file for backends and UIs that
 * take OTLP JSON uploads (Jaeger's), or a body to POST to a collector's `/v1/traces`.
 *
 * @example
 * writeFileSync("trace.otlp.json", JSON.stringify(otlpJsonOf(spansFromEvents(events))));
 */
export function otlpJsonOf(spans: readonly Span[], options: OtlpJsonOptions = {}): OtlpJsonTrace {
  if (!Array.isArray(spans))
    throw new InvalidArgumentError(
      "[tracing-otel] otlpJsonOf(spans, options): spans must be an array of loopguard spans (from spansFromEvents(events))",
    );
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[tracing-otel] otlpJsonOf(spans, options): options must be an object such as { serviceName }",
    );
  if (
    options.serviceName !== undefined &&
    (typeof options.serviceName !== "string" || options.serviceName === "")
  )
    throw new InvalidArgumentError(
      "[tracing-otel] otlpJsonOf: serviceName must be a non-empty string",
    );
  const captureContent = options.captureContent ?? false;
  const out: OtlpJsonSpan[] = spans.map((span, index) => {
    if (
      span === null ||
      typeof span !== "object" ||
      !/^[0-9a-f]{32}$/.test(String(span.traceId)) ||
      !/^[0-9a-f]{16}$/.test(String(span.spanId))
    )
      throw new InvalidArgumentError(
        `[tracing-otel] otlpJsonOf: spans[${index}] is not a loopguard span with a 32-hex traceId and a 16-hex spanId`,
      );
    const planned = genAiSpanOf(span, {
      captureContent,
      ...(options.redact ? { redact: options.redact } : {}),
    });
    return {
      traceId: span.traceId,
      spanId: span.spanId,
      ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
      name: planned.name,
      // The API's SpanKind counts from INTERNAL = 0; OTLP's from UNSPECIFIED = 0.
      kind: planned.kind + 1,
      startTimeUnixNano: nanos(span.startTime),
      endTimeUnixNano: nanos(Math.max(span.startTime, span.endTime)),
      attributes: attributesOf(planned.attributes),
      events: planned.events.map((event) => ({
        timeUnixNano: nanos(event.time),
        name: event.name,
        attributes: attributesOf(event.attributes),
      })),
      status: {
        code: planned.status.code,
        ...(planned.status.message ? { message: planned.status.message } : {}),
      },
    };
  });
  return {
    resourceSpans: [
      {
        resource: {
          attributes: attributesOf({
            ...options.resourceAttributes,
            "service.name": options.serviceName ?? "loopguard",
          }),
        },
        scopeSpans: [{ scope: { name: scopeName }, spans: out }],
      },
    ],
  };
}

/** Milliseconds since the epoch as decimal nanoseconds (whole milliseconds, as a `Date`). */
function nanos(ms: number): string {
  return (BigInt(Math.trunc(ms)) * 1_000_000n).toString();
}

function attributesOf(attributes: Record<string, AttributeValue | undefined>): OtlpJsonAttribute[] {
  const out: OtlpJsonAttribute[] = [];
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue;
    out.push({ key, value: anyValueOf(value) });
  }
  return out;
}

function anyValueOf(value: AttributeValue | null | undefined): OtlpJsonValue {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number")
    return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (Array.isArray(value))
    return {
      arrayValue: {
        values: (value as Array<string | number | boolean | null | undefined>).map((item) =>
          item === null || item === undefined ? { stringValue: "" } : anyValueOf(item),
        ),
      },
    };
  return { stringValue: String(value) };
}
