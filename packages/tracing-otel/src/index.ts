export { OtlpConfigError, TraceExportError } from "./errors.js";
export { GenAi, GenAiOperation } from "./gen-ai-attributes.js";
export { loopguardIdGenerator } from "./loopguard-id-generator.js";
export { otelExporter } from "./otel-exporter.js";
export type { OtelExporterOptions } from "./otel-exporter-options.js";
export type {
  OtlpJsonAttribute,
  OtlpJsonOptions,
  OtlpJsonSpan,
  OtlpJsonTrace,
  OtlpJsonValue,
} from "./otlp-json-of.js";
export { otlpJsonOf } from "./otlp-json-of.js";
export type { OtlpTracing, OtlpTracingOptions } from "./otlp-tracing.js";
export { otlpTracing } from "./otlp-tracing.js";
export type { RedactingSpanProcessorOptions } from "./redacting-span-processor.js";
export { redactingSpanProcessor } from "./redacting-span-processor.js";
