/**
 * `@loopguard/tracing-otel/internal`: how a loopguard span becomes a GenAI span (attributes,
 * message parts, ids), kept off the root so the root holds only what users use. No stability
 * promise: these may change in any release.
 */
export { anthropicProvider, captureContentEnv } from "../gen-ai-attributes.js";
export type { ContentRedactor, GenAiMessage, GenAiPart, GenAiSpan } from "../gen-ai-span.js";
export { genAiSpanOf, partsOf } from "../gen-ai-span.js";
export { captureFromEnv } from "../otel-exporter-options.js";
