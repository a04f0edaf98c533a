import { InvalidArgumentError } from "@loopguard/core";
import type { TracerProvider } from "@opentelemetry/api";
import type { Resource } from "@opentelemetry/resources";
import type { SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { FailFastOptions } from "./fail-fast-exporter.js";
import { captureContentEnv } from "./gen-ai-attributes.js";
import type { ContentRedactor } from "./gen-ai-span.js";

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
  /**
   * With `exporter`: when the collector counts as down, so sends fail at once instead of
   * waiting. A refused or reset connection marks it down at once (with `otlpTracing`'s
   * exporter, before the OTLP exporter's own retries); so does a failed send, or a send with
   * no answer within `answerWithinMs` (default 5 000). While down, batches are dropped
   * (counted) and one is let through as a probe `probeAfterMs` (default 5 000, doubling to
   * 60 000) after the last failure; a delivered send marks it up again.
   */
  failFast?: { answerWithinMs?: number; probeAfterMs?: number };
}

export interface ResolvedOptions {
  exporter: SpanExporter | undefined;
  spanProcessor: SpanProcessor | undefined;
  tracerProvider: TracerProvider | undefined;
  serviceName: string | undefined;
  resource: Resource | undefined;
  captureContent: boolean;
  redact: ContentRedactor | undefined;
  onError: ((error: unknown) => void) | undefined;
  batch: { maxSpans: number; delayMs: number } | false;
  failFast: FailFastOptions;
}

/** Checks `otelExporter`'s options, naming the bad one, and fills in the defaults. */
export function validate(options: OtelExporterOptions): ResolvedOptions {
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
    failFast: failFastOf(options.failFast),
  };
}

/** Checks `batch`. */
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

/** Checks `failFast`. */
function failFastOf(failFast: OtelExporterOptions["failFast"]): FailFastOptions {
  if (failFast !== undefined && (typeof failFast !== "object" || failFast === null))
    throw new InvalidArgumentError(
      "[tracing-otel] otelExporter: failFast must be an object like { answerWithinMs: 5000, probeAfterMs: 5000 }",
    );
  const answerWithinMs = failFast?.answerWithinMs ?? 5_000;
  const probeAfterMs = failFast?.probeAfterMs ?? 5_000;
  for (const [name, value] of [
    ["answerWithinMs", answerWithinMs],
    ["probeAfterMs", probeAfterMs],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 600_000)
      throw new InvalidArgumentError(
        `[tracing-otel] otelExporter: failFast.${name} must be a whole number of milliseconds from 1 to 600000 (default 5000), got ${String(value)}`,
      );
  }
  return { answerWithinMs, probeAfterMs };
}

/** Checks a shutdown deadline: a finite number of milliseconds above 0. */
export function checkDeadlineMs(deadlineMs: unknown): number | undefined {
  if (deadlineMs === undefined) return undefined;
  if (typeof deadlineMs !== "number" || !Number.isFinite(deadlineMs) || deadlineMs <= 0)
    throw new InvalidArgumentError(
      `[tracing-otel] otelExporter.shutdown({ deadlineMs }): deadlineMs must be a finite number of milliseconds above 0, got ${String(deadlineMs)}`,
    );
  return deadlineMs;
}
