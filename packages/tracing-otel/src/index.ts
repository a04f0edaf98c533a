export { OtlpConfigError, TraceExportError } from "./errors.js";
export {
  anthropicProvider,
  captureContentEnv,
  GenAi,
  GenAiOperation,
} from "./gen-ai-attributes.js";
export type { ContentRedactor, GenAiMessage, GenAiPart, GenAiSpan } from "./gen-ai-span.js";
export { genAiSpanOf, partsOf } from "./gen-ai-span.js";
export { loopguardIdGenerator } from "./loopguard-id-generator.js";
export type { OtelExporterOptions } from "./otel-exporter.js";
export { captureFromEnv, otelExporter } from "./otel-exporter.js";
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
