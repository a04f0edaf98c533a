import { type Exporter, type ExportResult, InvalidArgumentError, type Span } from "@loopguard/core";
import {
  ROOT_CONTEXT,
  type SpanContext,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import { defaultResource, type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { TraceExportError } from "./errors.js";
import { captureContentEnv } from "./gen-ai-attributes.js";
import { type ContentRedactor, genAiSpanOf } from "./gen-ai-span.js";
import { loopguardIdGenerator, withPendingIds } from "./loopguard-id-generator.js";

/** Options of {@link otelExporter}. Give at most one of `exporter`, `spanProcessor`, `tracerProvider`. */
export interface OtelExporterOptions {
  /**
   * An OpenTelemetry SpanExporter (e.g. `otlpTracing().exporter`), run behind OpenTelemetry's
   * own `BatchSpanProcessor` (see `batch`). A failed send is kept and thrown from the next
   * `forceFlush`, which core reports to `createAgent({ onError })`. Shut down with the agent.
   */
  exporter?: SpanExporter;
  /** A SpanProcessor (e.g. a `BatchSpanProcessor`); its send errors go to OpenTelemetry's diag logger. Shut down with the agent. */
  spanProcessor?: SpanProcessor;
  /**
   * Your own tracer provider (default: the global one). Give it `idGenerator: loopguardIdGenerator()`
   * to keep core's span ids; otherwise ids are remapped and each trace is held until its run span
   * ends, to keep the tree whole. Never shut down by this exporter.
   */
  tracerProvider?: TracerProvider;
  /** `service.name` of the provider this exporter builds (with `exporter` or `spanProcessor`). Default: the resource's, else `loopguard`. */
  serviceName?: string;
  /** The resource of the provider this exporter builds (e.g. `otlpTracing().resource`). */
  resource?: Resource;
  /**
   * Write message content (`gen_ai.input.messages`, `gen_ai.output.messages`, tool arguments and
   * results). Default: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, else off.
   * Content arrives redacted by `createAgent({ redact })`: with capture on, `createAgent` refuses
   * an agent that has neither its own `redact` nor this exporter's (`redact: false` on the agent
   * is the explicit way to export raw content).
   */
  captureContent?: boolean;
  /** Redacts content (and status messages) once more before export: defence in depth. */
  redact?: ContentRedactor;
  /** Receives problems that cannot travel back in an export result (a provider that records nothing, a flush at shutdown). */
  onError?: (error: unknown) => void;
  /** Where to read `OTEL_*` variables. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * With `exporter`: the settings of the `BatchSpanProcessor` it runs behind (batching belongs
   * to span processors, as OpenTelemetry's exporter guide says). Spans are sent when core
   * flushes at the end of each run (or its park), when `maxSpans` are waiting
   * (`maxExportBatchSize`), or `delayMs` after the first (`scheduledDelayMillis`). `false`
   * sends every batch core hands over at once, with no processor, and returns the outcome as
   * its export result.
   */
  batch?: { maxSpans?: number; delayMs?: number } | false;
}

/** The tracer's instrumentation scope. */
const scopeName = "@loopguard/tracing-otel";
/** Traces whose id mapping is kept after their run span, for spans a resume adds later. */
const rememberedTraces = 256;

/**
 * Creates an Exporter that writes loopguard's spans as OpenTelemetry spans under the GenAI
 * semantic conventions: `invoke_agent {agent}` for a run, `step N` for each model turn,
 * `chat {model}` for a model call, `execute_tool {tool}` for a tool call. Ids, parents, times,
 * events and status are those of core's spans. Fails open: it never throws into a run.
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

  let provider: TracerProvider;
  let owned: BasicTracerProvider | undefined;
  let collected: ReadableSpan[] | undefined;
  const failures: TraceExportError[] = [];
  const reporting = config.exporter
    ? reportingExporter(config.exporter, (error) => failures.push(error))
    : undefined;
  if (config.exporter || config.spanProcessor) {
    const serviceName =
      config.serviceName ??
      (config.resource?.attributes["service.name"] === undefined ? "loopguard" : undefined);
    let resource = defaultResource();
    if (config.resource) resource = resource.merge(config.resource);
    if (serviceName)
      resource = resource.merge(resourceFromAttributes({ "service.name": serviceName }));
    let processor = config.spanProcessor;
    if (!processor && config.batch && reporting) {
      processor = new BatchSpanProcessor(reporting, {
        maxExportBatchSize: config.batch.maxSpans,
        maxQueueSize: Math.max(2048, config.batch.maxSpans),
        scheduledDelayMillis: config.batch.delayMs,
      });
    }
    if (!processor) {
      // batch: false: spans wait only until core's export call returns, then go at once.
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
    owned = new BasicTracerProvider({
      resource,
      idGenerator: loopguardIdGenerator(),
      spanProcessors: [processor],
    });
    provider = owned;
  } else {
    provider = config.tracerProvider ?? trace.getTracerProvider();
  }
  const tracer: Tracer = provider.getTracer(scopeName);

  // With a provider we did not build, ids may not be ours: hold each trace until its run span
  // arrives, then start parents before children so each child links to its parent's real id.
  let holdTraces = owned === undefined;
  const held = new Map<string, Span[]>();
  const mapped = new Map<string, Map<string, SpanContext>>();
  let warnedNotRecording = false;
  const inFlight = new Set<Promise<unknown>>();
  let shutdownPromise: Promise<void> | undefined;

  const contextsOf = (traceId: string) => {
    let contexts = mapped.get(traceId);
    if (!contexts) {
      contexts = new Map();
      mapped.set(traceId, contexts);
      if (mapped.size > rememberedTraces) mapped.delete(mapped.keys().next().value as string);
    }
    return contexts;
  };

  const emit = (spans: readonly Span[]) => {
    for (const span of parentsFirst(spans)) {
      const planned = genAiSpanOf(span, {
        captureContent: config.captureContent,
        ...(config.redact ? { redact: config.redact } : {}),
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
        reportError(
          new TraceExportError(
            spans.length,
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
    }
  };

  /** batch: false: sends what core just handed over, and returns the outcome. */
  const send = (): Promise<ExportResult> => {
    if (!config.exporter || !collected || collected.length === 0)
      return Promise.resolve({ code: "success" });
    const sent = sendNow(config.exporter, collected.splice(0, collected.length));
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

  const flushHeld = () => {
    const traces = [...held.values()];
    held.clear();
    for (const spans of traces) emit(spans);
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
        if (holdTraces) {
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
          return { code: "success" };
        }
        emit(spans);
        // Behind a span processor (the default BatchSpanProcessor), the processor sends.
        return collected ? send() : { code: "success" };
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
      flushHeld();
      await Promise.all(inFlight);
      try {
        if (owned) await owned.forceFlush();
        else await (provider as { forceFlush?: () => Promise<void> }).forceFlush?.();
      } catch (error) {
        // A failed send of the processor was kept by the reporting exporter: thrown below.
        if (!(error instanceof TraceExportError)) failures.push(asExportError(error));
      }
      throwFailures();
    },
    shutdown() {
      shutdownPromise ??= (async () => {
        flushHeld();
        await Promise.all(inFlight);
        try {
          // The provider shuts its processor down, which flushes and shuts the exporter down.
          if (owned) await owned.shutdown();
          if (collected) await config.exporter?.shutdown();
        } catch (error) {
          if (!(error instanceof TraceExportError)) failures.push(asExportError(error));
        }
        try {
          throwFailures();
        } catch (error) {
          reportError(error);
        }
      })();
      return shutdownPromise;
    },
  };
}

interface ResolvedOptions {
  exporter: SpanExporter | undefined;
  spanProcessor: SpanProcessor | undefined;
  tracerProvider: TracerProvider | undefined;
  serviceName: string | undefined;
  resource: Resource | undefined;
  captureContent: boolean;
  redact: ContentRedactor | undefined;
  onError: ((error: unknown) => void) | undefined;
  batch: { maxSpans: number; delayMs: number } | false;
}

function validate(options: OtelExporterOptions): ResolvedOptions {
  if (typeof options !== "object" || options === null)
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter(options): options must be an object, e.g. otelExporter({ exporter: otlpTracing().exporter })",
    );
  const given = (["exporter", "spanProcessor", "tracerProvider"] as const).filter(
    (key) => options[key] !== undefined,
  );
  if (given.length > 1)
    throw new InvalidArgumentError(
      `[tracing-otel] otelExporter: give one of exporter, spanProcessor or tracerProvider, not ${given.join(" and ")}`,
    );
  if (options.exporter !== undefined && typeof options.exporter?.export !== "function")
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: exporter must be an OpenTelemetry SpanExporter (with export(spans, callback)), e.g. otlpTracing().exporter",
    );
  if (options.spanProcessor !== undefined && typeof options.spanProcessor?.onEnd !== "function")
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: spanProcessor must be an OpenTelemetry SpanProcessor (with onStart and onEnd)",
    );
  if (
    options.tracerProvider !== undefined &&
    typeof options.tracerProvider?.getTracer !== "function"
  )
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: tracerProvider must be an OpenTelemetry TracerProvider (with getTracer)",
    );
  if (options.tracerProvider !== undefined || given.length === 0) {
    for (const key of ["serviceName", "resource"] as const) {
      if (options[key] !== undefined)
        throw new InvalidArgumentError(
          `[tracing-otel] otelExporter: ${key} applies only with exporter or spanProcessor; set it on your tracer provider's resource instead`,
        );
    }
  }
  if (
    options.serviceName !== undefined &&
    (typeof options.serviceName !== "string" || options.serviceName.trim() === "")
  )
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: serviceName must be a non-empty string",
    );
  if (
    options.resource !== undefined &&
    (typeof options.resource !== "object" ||
      options.resource === null ||
      typeof options.resource.attributes !== "object" ||
      options.resource.attributes === null ||
      typeof options.resource.merge !== "function")
  )
    throw new InvalidArgumentError(
      '[tracing-otel] otelExporter: resource must be an OpenTelemetry Resource, e.g. otlpTracing().resource or resourceFromAttributes({ "service.name": "support-agent" }) from @opentelemetry/resources',
    );
  if (options.env !== undefined && (typeof options.env !== "object" || options.env === null))
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: env must be an object of variables such as process.env, or left out to read process.env",
    );
  for (const key of ["redact", "onError"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "function")
      throw new InvalidArgumentError(`[tracing-otel] otelExporter: ${key} must be a function`);
  }
  if (options.captureContent !== undefined && typeof options.captureContent !== "boolean")
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: captureContent must be true or false",
    );
  return {
    exporter: options.exporter,
    spanProcessor: options.spanProcessor,
    tracerProvider: options.tracerProvider,
    serviceName: options.serviceName,
    resource: options.resource,
    captureContent: options.captureContent ?? captureFromEnv(options.env ?? process.env),
    redact: options.redact,
    onError: options.onError,
    batch: batchOf(options.batch),
  };
}

function batchOf(batch: OtelExporterOptions["batch"]): ResolvedOptions["batch"] {
  if (batch === false) return false;
  if (batch !== undefined && (typeof batch !== "object" || batch === null)) {
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: batch must be false or { maxSpans, delayMs }",
    );
  }
  const maxSpans = batch?.maxSpans ?? 512;
  const delayMs = batch?.delayMs ?? 2_000;
  if (!Number.isInteger(maxSpans) || maxSpans < 1 || maxSpans > 100_000) {
    throw new InvalidArgumentError(
      `[tracing-otel] otelExporter: batch.maxSpans must be a whole number from 1 to 100000, got ${String(maxSpans)}`,
    );
  }
  if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 600_000) {
    throw new InvalidArgumentError(
      `[tracing-otel] otelExporter: batch.delayMs must be a whole number of milliseconds from 0 to 600000, got ${String(delayMs)}`,
    );
  }
  return { maxSpans, delayMs };
}

/** Reads `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`. */
export function captureFromEnv(env: Record<string, string | undefined>): boolean {
  if (typeof env !== "object" || env === null)
    throw new InvalidArgumentError(
      "[tracing-otel] captureFromEnv(env): env must be an object of variables such as process.env",
    );
  const raw = env[captureContentEnv]?.trim().toLowerCase();
  if (raw === undefined || raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  throw new InvalidArgumentError(
    `[tracing-otel] ${captureContentEnv}=${JSON.stringify(env[captureContentEnv])} is neither true nor false; unset it to keep message content out of traces, or set it to true to capture it`,
  );
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

function asExportError(error: unknown): TraceExportError {
  return new TraceExportError(
    0,
    `[tracing-otel] the OpenTelemetry span processor failed: ${(error as Error)?.message ?? String(error)}`,
    { cause: error },
  );
}

/**
 * Wraps a SpanExporter so that a failed or thrown send becomes a `TraceExportError` that says
 * what to check, handed to `failed` (kept for the next `forceFlush`) and returned to the
 * processor as a failed result. `shutdown` reaches the exporter once.
 */
function reportingExporter(
  exporter: SpanExporter,
  failed: (error: TraceExportError) => void,
): SpanExporter {
  let closing: Promise<void> | undefined;
  return {
    export(spans, done) {
      void sendNow(exporter, spans).then((result) => {
        if (result.code === "success") return done({ code: 0 });
        failed(result.error as TraceExportError);
        done({ code: 1, error: result.error });
      });
    },
    shutdown() {
      closing ??= exporter.shutdown();
      return closing;
    },
    async forceFlush() {
      await exporter.forceFlush?.();
    },
  };
}

/** One send to a SpanExporter, as a result that never rejects. */
function sendNow(exporter: SpanExporter, batch: ReadableSpan[]): Promise<ExportResult> {
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
