import { createRequire } from "node:module";
import { InvalidArgumentError, type Redactor } from "@loopguard/core";
import {
  type Attributes,
  type AttributeValue,
  type Context,
  diag,
  type Link,
} from "@opentelemetry/api";
import type { ReadableSpan, Span, SpanProcessor, TimedEvent } from "@opentelemetry/sdk-trace-base";
import { OtlpConfigError } from "./errors.js";

/** Options of `redactingSpanProcessor`. */
export interface RedactingSpanProcessorOptions {
  /**
   * Redacts each string the span carries. Given a whole attribute map (so key-aware rules,
   * such as a `password` or `authorization` key, apply) and each name and message alone.
   * Default: `createRedactor()` from `@loopguard/redact` (an optional peer dependency: install
   * it, or pass your own redactor).
   */
  redactor?: Redactor;
  /**
   * Told when the redactor throws or returns something that is not a span value (the span
   * then goes out with no strings: see "How it fails"), or when the default redactor cannot
   * load. Default: OpenTelemetry's `diag.error`.
   */
  onError?: (error: unknown, where: string) => void;
}

/** What a span's name, an event's name and attributes become when the redactor fails. */
const failedName = "[redaction failed]";
/** Spans held while the default redactor loads (at start-up only) before the oldest go. */
const maxHeldSpans = 2_048;

/**
 * A `SpanProcessor` for any app's OpenTelemetry setup that redacts every span before `next`
 * (a `BatchSpanProcessor`, or any processor) sees it: the span name, attributes, each event's
 * name and attributes, each link's attributes and the status message. Ids, times, kinds,
 * resource and scope pass unchanged. `next.onStart` is never called (it would see the live,
 * unredacted span); `forceFlush` and `shutdown` reach `next`.
 *
 * How it fails: closed. A redactor that throws, or returns a non-string for a string, sends the
 * span on with its strings removed (name `[redaction failed]`, string attributes and the status
 * message dropped, numbers and booleans kept) and reports to `onError`. Without a `redactor`
 * and without `@loopguard/redact` installed it throws `OtlpConfigError` here, at set-up.
 *
 * @example
 * const provider = new NodeTracerProvider({
 *   spanProcessors: [redactingSpanProcessor(new BatchSpanProcessor(new OTLPTraceExporter()))],
 * });
 */
export function redactingSpanProcessor(
  next: SpanProcessor,
  options: RedactingSpanProcessorOptions = {},
): SpanProcessor {
  if (
    next === null ||
    typeof next !== "object" ||
    typeof next.onEnd !== "function" ||
    typeof next.forceFlush !== "function" ||
    typeof next.shutdown !== "function"
  )
    throw new InvalidArgumentError(
      "[tracing-otel] redactingSpanProcessor(next, options): next must be a SpanProcessor (onEnd, forceFlush, shutdown), such as new BatchSpanProcessor(exporter)",
    );
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[tracing-otel] redactingSpanProcessor(next, options): options must be an object such as { redactor }",
    );
  for (const key of ["redactor", "onError"] as const)
    if (options[key] !== undefined && typeof options[key] !== "function")
      throw new InvalidArgumentError(
        `[tracing-otel] redactingSpanProcessor: options.${key} must be a function, got ${typeof options[key]}`,
      );
  const report = (error: unknown, where: string) => {
    try {
      if (options.onError) options.onError(error, where);
      else diag.error(`[tracing-otel] redactingSpanProcessor: ${where}`, error);
    } catch {
      // A reporter that throws must not break the app's tracing.
    }
  };

  let redactor: Redactor | undefined = options.redactor;
  let loading: Promise<void> | undefined;
  const held: ReadableSpan[] = [];
  let dropped = 0;
  let closed = false;
  if (!redactor) {
    assertDefaultRedactorInstalled();
    loading = loadDefaultRedactor().then(
      (loaded) => {
        redactor = loaded;
        for (const span of held.splice(0)) send(span);
      },
      (error: unknown) => {
        // Fail closed: what was held is dropped, never sent unredacted.
        report(error, "loading the default redactor from @loopguard/redact");
        held.length = 0;
        closed = true;
      },
    );
  }

  function send(span: ReadableSpan): void {
    let redacted: ReadableSpan;
    try {
      redacted = redactSpan(span, redactor!);
    } catch (error) {
      report(error, `redactor on span ${span.spanContext().spanId}`);
      redacted = strippedSpan(span);
    }
    next.onEnd(redacted);
  }

  return {
    onStart(_span: Span, _parentContext: Context): void {
      // Deliberately not passed on: the live span is not redacted yet.
    },
    onEnd(span: ReadableSpan): void {
      if (closed) return;
      if (redactor) {
        send(span);
        return;
      }
      if (held.length >= maxHeldSpans) {
        held.shift();
        dropped += 1;
        if (dropped === 1)
          report(
            new Error(
              `more than ${maxHeldSpans} spans ended before @loopguard/redact loaded; the oldest are dropped`,
            ),
            "holding spans",
          );
      }
      held.push(span);
    },
    async forceFlush(): Promise<void> {
      await loading;
      await next.forceFlush();
    },
    async shutdown(): Promise<void> {
      await loading;
      closed = true;
      await next.shutdown();
    },
  };
}

/** Throws at set-up when the default redactor's package cannot be found. */
function assertDefaultRedactorInstalled(): void {
  try {
    createRequire(import.meta.url).resolve("@loopguard/redact");
  } catch (error) {
    throw new OtlpConfigError(
      "redactor",
      "[tracing-otel] redactingSpanProcessor: no redactor given and @loopguard/redact is not installed; install it (pnpm add @loopguard/redact) for the default redactor, or pass { redactor: (value) => ... }",
      { cause: error },
    );
  }
}

async function loadDefaultRedactor(): Promise<Redactor> {
  const module = (await import("@loopguard/redact")) as { createRedactor: () => Redactor };
  return module.createRedactor();
}

/** The span as `next` sees it: its strings redacted, everything else the span's own. */
function redactSpan(span: ReadableSpan, redactor: Redactor): ReadableSpan {
  const text = (value: string, where: string): string => {
    const out = redactor(value);
    if (typeof out !== "string")
      throw new TypeError(`the redactor returned ${typeOf(out)} for the string ${where}`);
    return out;
  };
  const attributes = (map: Attributes, where: string): Attributes => {
    const out = redactor({ ...map });
    if (out === null || typeof out !== "object" || Array.isArray(out))
      throw new TypeError(`the redactor returned ${typeOf(out)} for the attributes of ${where}`);
    const kept: Attributes = {};
    for (const key of Object.keys(map)) {
      const value = (out as Record<string, unknown>)[key];
      // A key the redactor removed stays removed; a value it turned into something a span
      // cannot carry is an error (fail closed, not a guess).
      if (value === undefined) continue;
      if (!isAttributeValue(value))
        throw new TypeError(
          `the redactor returned ${typeOf(value)} for attribute ${key} of ${where}`,
        );
      kept[key] = value;
    }
    return kept;
  };
  return view(span, {
    name: text(span.name, "span name"),
    attributes: attributes(span.attributes, "the span"),
    events: span.events.map((event) => ({
      ...event,
      name: text(event.name, "event name"),
      ...(event.attributes
        ? { attributes: attributes(event.attributes, `event ${JSON.stringify(event.name)}`) }
        : {}),
    })),
    links: span.links.map((link) =>
      link.attributes ? { ...link, attributes: attributes(link.attributes, "a link") } : link,
    ),
    status:
      span.status.message === undefined
        ? span.status
        : { ...span.status, message: text(span.status.message, "status message") },
  });
}

/** The span with every string removed (the redactor failed on it). */
function strippedSpan(span: ReadableSpan): ReadableSpan {
  const keep = (map: Attributes | undefined): Attributes => {
    const kept: Attributes = {};
    for (const [key, value] of Object.entries(map ?? {}))
      if (value !== undefined && !carriesText(value)) kept[key] = value;
    return kept;
  };
  const { message: _message, ...status } = span.status;
  return view(span, {
    name: failedName,
    attributes: keep(span.attributes),
    events: span.events.map(
      (event): TimedEvent => ({ ...event, name: failedName, attributes: keep(event.attributes) }),
    ),
    links: span.links.map((link): Link => ({ ...link, attributes: keep(link.attributes) })),
    status,
  });
}

function view(
  span: ReadableSpan,
  changed: Pick<ReadableSpan, "name" | "attributes" | "events" | "links" | "status">,
): ReadableSpan {
  return {
    name: changed.name,
    kind: span.kind,
    spanContext: () => span.spanContext(),
    ...(span.parentSpanContext ? { parentSpanContext: span.parentSpanContext } : {}),
    startTime: span.startTime,
    endTime: span.endTime,
    status: changed.status,
    attributes: changed.attributes,
    links: changed.links,
    events: changed.events,
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

function isAttributeValue(value: unknown): value is AttributeValue {
  if (typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return true;
  if (!Array.isArray(value)) return false;
  const kinds = new Set<string>();
  for (const item of value) {
    if (item === null || item === undefined) continue;
    if (!["string", "number", "boolean"].includes(typeof item)) return false;
    kinds.add(typeof item);
  }
  return kinds.size <= 1;
}

function carriesText(value: AttributeValue): boolean {
  return (
    typeof value === "string" ||
    (Array.isArray(value) && value.some((item) => typeof item === "string"))
  );
}

function typeOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}
