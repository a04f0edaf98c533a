import type { Span } from "@loopguard/core";
import { ROOT_CONTEXT, type SpanContext, TraceFlags, type Tracer, trace } from "@opentelemetry/api";
import { TraceExportError } from "./errors.js";
import { type ContentRedactor, genAiSpanOf } from "./gen-ai-span.js";
import { withPendingIds } from "./loopguard-id-generator.js";

/** Traces whose id mapping is kept after their run span, for spans a resume adds later. */
const rememberedTraces = 256;

/** What `spanEmitter` needs of the exporter's settings. */
export interface EmitterOptions {
  captureContent: boolean;
  redact: ContentRedactor | undefined;
  /** Hold each trace until its run span arrives (a provider whose ids may not be core's). */
  holdTraces: boolean;
  reportError(error: unknown): void;
}

/** Turns core spans into OpenTelemetry spans on a tracer. */
export interface SpanEmitter {
  /** Emits spans now, or holds them until their trace is complete (see `holdTraces`). */
  take(spans: readonly Span[]): void;
  /** Emits every held trace, complete or not. */
  flushHeld(): void;
}

/**
 * Starts and ends one OpenTelemetry span per core span, parents first, with core's ids (or, on
 * a provider with its own ids, each child linked to its parent's real id).
 */
export function spanEmitter(tracer: Tracer, options: EmitterOptions): SpanEmitter {
  let holdTraces = options.holdTraces;
  const held = new Map<string, Span[]>();
  const mapped = new Map<string, Map<string, SpanContext>>();
  let warnedNotRecording = false;

  const contextsOf = (traceId: string) => {
    let contexts = mapped.get(traceId);
    if (!contexts) {
      contexts = new Map();
      mapped.set(traceId, contexts);
      if (mapped.size > rememberedTraces) mapped.delete(mapped.keys().next().value as string);
    }
    return contexts;
  };

  const emitOne = (span: Span, batchSize: number) => {
    const planned = genAiSpanOf(span, {
      captureContent: options.captureContent,
      ...(options.redact ? { redact: options.redact } : {}),
    });
    const contexts = contextsOf(span.traceId);
    let parentContext = ROOT_CONTEXT;
    if (span.parentSpanId) {
      const parent: SpanContext = contexts.get(span.parentSpanId) ?? {
        traceId: span.traceId,
        spanId: span.parentSpanId,
        traceFlags: TraceFlags.SAMPLED,
        isRemote: false,
      };
      parentContext = trace.setSpanContext(ROOT_CONTEXT, parent);
    }
    const otelSpan = withPendingIds(span.traceId, span.spanId, () =>
      tracer.startSpan(
        planned.name,
        {
          kind: planned.kind,
          attributes: planned.attributes,
          startTime: new Date(span.startTime),
          root: !span.parentSpanId,
        },
        parentContext,
      ),
    );
    const context = otelSpan.spanContext();
    contexts.set(span.spanId, context);
    if (!otelSpan.isRecording() && !warnedNotRecording) {
      warnedNotRecording = true;
      options.reportError(
        new TraceExportError(
          batchSize,
          "[tracing-otel] the tracer provider records nothing, so loopguard's spans are dropped: register a provider (e.g. the NodeSDK) before the agent runs, or pass otelExporter({ exporter: otlpTracing().exporter })",
        ),
      );
    }
    if (
      holdTraces &&
      context.spanId === span.spanId &&
      context.traceId === span.traceId &&
      otelSpan.isRecording()
    ) {
      // The provider uses loopguardIdGenerator(): ids match, no need to hold traces any more.
      holdTraces = false;
    }
    for (const event of planned.events)
      otelSpan.addEvent(event.name, event.attributes, new Date(event.time));
    otelSpan.setStatus(planned.status);
    otelSpan.end(new Date(Math.max(span.startTime, span.endTime)));
  };

  const emit = (spans: readonly Span[]) => {
    for (const span of parentsFirst(spans)) emitOne(span, spans.length);
  };

  return {
    take(spans) {
      if (!holdTraces) {
        emit(spans);
        return;
      }
      for (const span of spans) {
        const list = held.get(span.traceId) ?? [];
        list.push(span);
        held.set(span.traceId, list);
        // The run span is the root and ends last: the trace is complete.
        if (!span.parentSpanId) {
          held.delete(span.traceId);
          emit(list);
        }
      }
    },
    flushHeld() {
      const traces = [...held.values()];
      held.clear();
      for (const spans of traces) emit(spans);
    },
  };
}

/** Orders spans so that a parent comes before its children (the input order otherwise). */
function parentsFirst(spans: readonly Span[]): Span[] {
  const byId = new Map(spans.map((span) => [span.spanId, span]));
  const done = new Set<string>();
  const ordered: Span[] = [];
  const visit = (span: Span, depth: number) => {
    if (done.has(span.spanId)) return;
    const parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
    // depth guards against a cycle in malformed input.
    if (parent && depth < spans.length) visit(parent, depth + 1);
    if (done.has(span.spanId)) return;
    done.add(span.spanId);
    ordered.push(span);
  };
  for (const span of spans) visit(span, 0);
  return ordered;
}
