import type { Exporter, ExporterShutdown, ExportResult, Span } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { trace } from "@opentelemetry/api";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { collectorHealthOf } from "./collector-health.js";
import { TraceExportError } from "./errors.js";
import { FailFastExporter } from "./fail-fast-exporter.js";
import { loopguardIdGenerator } from "./loopguard-id-generator.js";
import {
  checkDeadlineMs,
  type OtelExporterOptions,
  type ResolvedOptions,
  validate,
} from "./otel-exporter-options.js";
import { spanEmitter } from "./otel-span-emitter.js";

export type { OtelExporterOptions } from "./otel-exporter-options.js";
export { captureFromEnv } from "./otel-exporter-options.js";

/** The tracer's instrumentation scope. */
const scopeName = "@loopguard/tracing-otel";

/**
 * Creates an Exporter that writes loopguard's spans as OpenTelemetry spans under the GenAI
 * semantic conventions: `invoke_agent {agent}` for a run, `step N` for each model turn,
 * `chat {model}` for a model call, `execute_tool {tool}` for a tool call. Ids, parents, times,
 * events and status are those of core's spans. Fails open: it never throws into a run, and
 * fails fast: a collector known down (refused, reset, failing or silent) is not waited on.
 *
 * @example
 * const otlp = otlpTracing(); // OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, ...
 * const agent = createAgent({
 *   model, tools, redact,
 *   exporters: [otelExporter({ exporter: otlp.exporter, resource: otlp.resource })],
 *   onError: (error, where) => console.warn(where, error),
 * });
 */
export function otelExporter(options: OtelExporterOptions = {}): Exporter {
  const config = validate(options);
  const reportError = (error: unknown) => {
    try {
      config.onError?.(error);
    } catch {
      // The hook itself failed: nowhere left to report to.
    }
  };
  const failures: TraceExportError[] = [];
  const sending = config.exporter
    ? new FailFastExporter(
        config.exporter,
        collectorHealthOf(config.exporter),
        config.failFast,
        (error) => failures.push(error),
      )
    : undefined;
  const built = buildProvider(config, sending);
  const provider = built.owned ?? config.tracerProvider ?? trace.getTracerProvider();
  // With a provider we did not build, ids may not be ours: hold each trace until its run span.
  const emitter = spanEmitter(provider.getTracer(scopeName), {
    captureContent: config.captureContent,
    redact: config.redact,
    holdTraces: built.owned === undefined,
    reportError,
  });
  const inFlight = new Set<Promise<unknown>>();
  let returnedFailed = 0;
  let shutdownPromise: Promise<ExporterShutdown | undefined> | undefined;

  /** batch: false: sends what core just handed over, and returns the outcome. */
  const send = (): Promise<ExportResult> => {
    const collected = built.collected;
    if (!sending || !collected || collected.length === 0)
      return Promise.resolve({ code: "success" });
    const batch = collected.splice(0, collected.length);
    const sent = sending.send(batch).then((result) => {
      // Core counts a failed result as dropped: not counted again at shutdown.
      if (result.code === "failed") returnedFailed += batch.length;
      return result;
    });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    return sent;
  };

  const throwFailures = () => {
    if (failures.length === 0) return;
    const errors = failures.splice(0);
    if (errors.length === 1) throw errors[0];
    const spans = errors.reduce((sum, error) => sum + error.spanCount, 0);
    throw new TraceExportError(
      spans,
      `${errors[0]!.message} (${errors.length} sends of ${spans} spans in all failed since the last flush)`,
      { cause: errors[0] },
    );
  };

  return {
    name: "otel",
    captureContent: config.captureContent,
    // With its own redact, content is redacted here too, so an agent may leave redact out.
    redactsContent: config.redact !== undefined,
    export(spans: readonly Span[]): Promise<ExportResult> | ExportResult {
      if (shutdownPromise)
        return {
          code: "failed",
          error: new TraceExportError(
            spans.length,
            "[tracing-otel] export after shutdown: create a new otelExporter for a new agent",
          ),
        };
      try {
        if (!Array.isArray(spans))
          throw new InvalidArgumentError(
            "[tracing-otel] export(spans): spans must be an array of loopguard spans",
          );
        emitter.take(spans);
        // Behind a span processor (the default BatchSpanProcessor), the processor sends.
        return built.collected ? send() : { code: "success" };
      } catch (error) {
        return {
          code: "failed",
          error:
            error instanceof Error
              ? error
              : new TraceExportError(spans.length, `[tracing-otel] ${String(error)}`),
        };
      }
    },
    async forceFlush() {
      emitter.flushHeld();
      await Promise.all(inFlight);
      try {
        if (built.owned) await built.owned.forceFlush();
        else await (provider as { forceFlush?: () => Promise<void> }).forceFlush?.();
      } catch (error) {
        // A failed send of the processor was kept by the fail-fast exporter: thrown below.
        if (!(error instanceof TraceExportError)) failures.push(asExportError(error));
      }
      throwFailures();
    },
    shutdown(shutdownOptions?: { deadlineMs?: number }): Promise<ExporterShutdown | undefined> {
      let deadlineMs: number | undefined;
      try {
        deadlineMs = checkDeadlineMs(shutdownOptions?.deadlineMs);
      } catch (error) {
        return Promise.reject(error);
      }
      shutdownPromise ??= (async () => {
        emitter.flushHeld();
        const closing = (async () => {
          await Promise.all(inFlight);
          try {
            // The provider shuts its processor down, which flushes and shuts the exporter down
            // (at once when the collector is known down).
            if (built.owned) await built.owned.shutdown();
            if (built.collected) await sending?.shutdown();
          } catch (error) {
            if (!(error instanceof TraceExportError)) failures.push(asExportError(error));
          }
        })();
        await withDeadline(closing, deadlineMs);
        // What never reached the collector: failed, refused, dropped by a full processor queue
        // or still held at the deadline.
        // Past the deadline: stop whatever still waits on the collector.
        if (sending) void sending.shutdown();
        try {
          throwFailures();
        } catch (error) {
          reportError(error);
        }
        // Only with `exporter` does this exporter see what reached the collector.
        return sending
          ? { dropped: Math.max(0, built.accepted.count - sending.delivered - returnedFailed) }
          : undefined;
      })();
      return shutdownPromise;
    },
  };
}

/** Resolves when `work` does or `deadlineMs` passes (no deadline: when `work` does). */
function withDeadline(work: Promise<void>, deadlineMs: number | undefined): Promise<void> {
  if (deadlineMs === undefined) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    work,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deadlineMs);
      timer.unref?.();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The provider this exporter builds (with `exporter` or `spanProcessor`), and what it counts. */
interface BuiltProvider {
  owned: BasicTracerProvider | undefined;
  /** batch: false: spans wait here only until core's export call returns. */
  collected: ReadableSpan[] | undefined;
  /** Spans handed to the processor (with `exporter`): what should reach the collector. */
  accepted: { count: number };
}

function buildProvider(
  config: ResolvedOptions,
  sending: FailFastExporter | undefined,
): BuiltProvider {
  const accepted = { count: 0 };
  if (!config.exporter && !config.spanProcessor)
    return { owned: undefined, collected: undefined, accepted };
  const serviceName =
    config.serviceName ??
    (config.resource?.attributes["service.name"] === undefined ? "loopguard" : undefined);
  let resource = defaultResource();
  if (config.resource) resource = resource.merge(config.resource);
  if (serviceName)
    resource = resource.merge(resourceFromAttributes({ "service.name": serviceName }));
  let processor = config.spanProcessor;
  let collected: ReadableSpan[] | undefined;
  if (!processor && config.batch && sending) {
    processor = new BatchSpanProcessor(sending, {
      maxExportBatchSize: config.batch.maxSpans,
      maxQueueSize: Math.max(2048, config.batch.maxSpans),
      scheduledDelayMillis: config.batch.delayMs,
    });
  }
  if (!processor) {
    const sink: ReadableSpan[] = [];
    collected = sink;
    processor = {
      onStart() {},
      onEnd(span) {
        sink.push(span);
      },
      async forceFlush() {},
      async shutdown() {},
    };
  }
  const owned = new BasicTracerProvider({
    resource,
    idGenerator: loopguardIdGenerator(),
    spanProcessors: [sending ? counting(processor, accepted) : processor],
  });
  return { owned, collected, accepted };
}

/** Counts the spans that reach a processor. */
function counting(processor: SpanProcessor, accepted: { count: number }): SpanProcessor {
  return {
    onStart: (span, context) => processor.onStart(span, context),
    onEnd(span) {
      accepted.count += 1;
      processor.onEnd(span);
    },
    forceFlush: () => processor.forceFlush(),
    shutdown: () => processor.shutdown(),
  };
}

function asExportError(error: unknown): TraceExportError {
  return new TraceExportError(
    0,
    `[tracing-otel] the OpenTelemetry span processor failed: ${(error as Error)?.message ?? String(error)}`,
    { cause: error },
  );
}
