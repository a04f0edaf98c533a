import { type AttributeValue, InvalidArgumentError, type Span } from "@loopguard/core";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { anthropicProvider, GenAi, GenAiOperation } from "./gen-ai-attributes.js";

/** A function that redacts a value before it leaves the process. */
export type ContentRedactor = (value: unknown) => unknown;

/** How one of loopguard's spans is written as an OpenTelemetry span. */
export interface GenAiSpan {
  name: string;
  kind: SpanKind;
  attributes: Record<string, AttributeValue>;
  events: Array<{ name: string; time: number; attributes: Record<string, AttributeValue> }>;
  status: { code: SpanStatusCode; message?: string };
}

/** One part of a GenAI message (the conventions' `parts`). */
export type GenAiPart =
  | { type: "text"; content: string }
  | { type: "reasoning"; content: string }
  | { type: "tool_call"; id: string; name: string; arguments: unknown }
  | { type: "tool_call_response"; id: string; response: unknown };

/** One GenAI message in the conventions' JSON format. */
export interface GenAiMessage {
  role: "system" | "user" | "assistant" | "tool";
  parts: GenAiPart[];
  finish_reason?: string;
}

/** Attributes of core's spans that the GenAI names replace (not repeated under `loopguard.*`). */
const replaced = new Set([
  "loopguard.agent_id",
  "loopguard.model",
  "loopguard.response.id",
  "loopguard.response.model",
  "loopguard.stop_reason",
  "loopguard.request.max_tokens",
  "loopguard.usage.input_tokens",
  "loopguard.usage.output_tokens",
  "loopguard.usage.cache_read_tokens",
  "loopguard.usage.cache_write_tokens",
  "loopguard.stream",
  "loopguard.time_to_first_chunk_ms",
  "loopguard.tool.name",
  "loopguard.tool.call_id",
]);

const number = (value: AttributeValue | undefined): number =>
  typeof value === "number" && Number.isFinite(value) ? value : 0;
const text = (value: AttributeValue | undefined): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

/**
 * Maps one of core's spans to the OpenTelemetry span loopguard writes: the GenAI name, kind and
 * attributes, loopguard's own `loopguard.*` attributes, events and status. Content is added
 * only when `captureContent` is on, after `redact`.
 *
 * @example
 * const planned = genAiSpanOf(span, { captureContent: false });
 * tracer.startSpan(planned.name, { kind: planned.kind, attributes: planned.attributes });
 */
export function genAiSpanOf(
  span: Span,
  options: { captureContent: boolean; redact?: ContentRedactor },
): GenAiSpan {
  if (typeof span !== "object" || span === null || typeof span.attributes !== "object")
    throw new InvalidArgumentError(
      "[tracing-otel] genAiSpanOf(span, options): span must be a loopguard Span (from spansFromEvents or an Exporter's export), with kind, name and attributes",
    );
  if (
    typeof options !== "object" ||
    options === null ||
    typeof options.captureContent !== "boolean"
  )
    throw new InvalidArgumentError(
      "[tracing-otel] genAiSpanOf(span, options): options.captureContent must be true or false, e.g. genAiSpanOf(span, { captureContent: false })",
    );
  const source = span.attributes;
  const attributes: Record<string, AttributeValue> = {};
  const runId = text(source["loopguard.run_id"]);
  if (runId) attributes[GenAi.conversationId] = runId;
  let kind = SpanKind.INTERNAL;
  let errorType: string | undefined;

  switch (span.kind) {
    case "run": {
      attributes[GenAi.operationName] = GenAiOperation.invokeAgent;
      attributes[GenAi.providerName] = anthropicProvider;
      const agent = text(source["loopguard.agent_id"]);
      if (agent) {
        attributes[GenAi.agentName] = agent;
        attributes[GenAi.agentId] = agent;
      }
      const model = text(source["loopguard.model"]);
      if (model) attributes[GenAi.requestModel] = model;
      if (span.status === "error") errorType = text(source["loopguard.why"]) ?? "run_failed";
      break;
    }
    case "model": {
      kind = SpanKind.CLIENT;
      attributes[GenAi.operationName] = GenAiOperation.chat;
      attributes[GenAi.providerName] = anthropicProvider;
      // Core names the span `chat {model}` after the model the run asked for.
      const requested = span.name.startsWith("chat ") ? span.name.slice(5) : undefined;
      if (requested && requested !== "model") attributes[GenAi.requestModel] = requested;
      if (typeof source["loopguard.request.max_tokens"] === "number")
        attributes[GenAi.requestMaxTokens] = source["loopguard.request.max_tokens"];
      if (source["loopguard.stream"] === true) {
        attributes[GenAi.requestStream] = true;
        const firstChunkMs = source["loopguard.time_to_first_chunk_ms"];
        if (typeof firstChunkMs === "number")
          attributes[GenAi.responseTimeToFirstChunk] = firstChunkMs / 1000;
      }
      const responseModel = text(source["loopguard.response.model"]);
      if (responseModel) attributes[GenAi.responseModel] = responseModel;
      const responseId = text(source["loopguard.response.id"]);
      if (responseId) attributes[GenAi.responseId] = responseId;
      const stop = text(source["loopguard.stop_reason"]);
      if (stop) attributes[GenAi.responseFinishReasons] = [stop];
      if ("loopguard.usage.input_tokens" in source) {
        const cacheRead = number(source["loopguard.usage.cache_read_tokens"]);
        const cacheWrite = number(source["loopguard.usage.cache_write_tokens"]);
        // The conventions count cache reads and writes inside the input tokens; Anthropic does not.
        attributes[GenAi.usageInputTokens] =
          number(source["loopguard.usage.input_tokens"]) + cacheRead + cacheWrite;
        attributes[GenAi.usageCacheReadInputTokens] = cacheRead;
        attributes[GenAi.usageCacheCreationInputTokens] = cacheWrite;
        attributes[GenAi.usageOutputTokens] = number(source["loopguard.usage.output_tokens"]);
      }
      if (span.status === "error")
        errorType = text(source["loopguard.error.kind"]) ?? "model_error";
      break;
    }
    case "tool": {
      attributes[GenAi.operationName] = GenAiOperation.executeTool;
      const tool =
        text(source["loopguard.tool.name"]) ??
        (span.name.startsWith("execute_tool ") ? span.name.slice(13) : undefined);
      if (tool) attributes[GenAi.toolName] = tool;
      const callId = text(source["loopguard.tool.call_id"]);
      if (callId) attributes[GenAi.toolCallId] = callId;
      attributes[GenAi.toolType] = "function";
      if (span.status === "error")
        errorType =
          text(source["loopguard.block.reason"]) ??
          text(source["loopguard.error.kind"]) ??
          "tool_error";
      break;
    }
    case "step":
      break;
  }
  if (errorType) attributes[GenAi.errorType] = errorType;
  for (const [key, value] of Object.entries(source)) {
    if (key.startsWith("loopguard.") && !replaced.has(key)) attributes[key] = value;
  }
  if (options.captureContent && span.content) addContent(span, attributes, options.redact);

  let statusMessage =
    span.statusMessage !== undefined && options.redact
      ? stringOf(options.redact(span.statusMessage))
      : span.statusMessage;
  if (!options.captureContent && span.kind === "tool" && source["loopguard.blocked"] === true) {
    // A gate's message often quotes the call's arguments, and it is what the model is told:
    // content. Without capture, the stable reason code stands in for it.
    statusMessage = `refused: ${text(source["loopguard.block.reason"]) ?? "refused"}`;
  }
  const status: GenAiSpan["status"] =
    span.status === "error"
      ? { code: SpanStatusCode.ERROR, ...(statusMessage ? { message: statusMessage } : {}) }
      : { code: span.status === "ok" ? SpanStatusCode.OK : SpanStatusCode.UNSET };
  return {
    name: span.name,
    kind,
    attributes,
    events: span.events.map((event) => ({
      name: event.name,
      time: event.time,
      attributes: { ...event.attributes },
    })),
    status,
  };
}

function addContent(
  span: Span,
  attributes: Record<string, AttributeValue>,
  redact: ContentRedactor | undefined,
): void {
  const clean = (value: unknown) => (redact ? redact(value) : value);
  const input = span.content?.input === undefined ? undefined : clean(span.content.input);
  const output = span.content?.output === undefined ? undefined : clean(span.content.output);
  switch (span.kind) {
    case "run": {
      if (input !== undefined)
        attributes[GenAi.inputMessages] = JSON.stringify([
          { role: "user", parts: partsOf(input) } satisfies GenAiMessage,
        ]);
      if (output !== undefined) {
        const why = text(span.attributes["loopguard.why"]);
        attributes[GenAi.outputMessages] = JSON.stringify([
          {
            role: "assistant",
            parts: partsOf(output),
            ...(why ? { finish_reason: why } : {}),
          } satisfies GenAiMessage,
        ]);
      }
      break;
    }
    case "model": {
      if (input !== undefined) attributes[GenAi.inputMessages] = JSON.stringify(messagesOf(input));
      if (output !== undefined) {
        const stop = text(span.attributes["loopguard.stop_reason"]);
        attributes[GenAi.outputMessages] = JSON.stringify([
          {
            role: "assistant",
            parts: partsOf(output),
            ...(stop ? { finish_reason: stop } : {}),
          } satisfies GenAiMessage,
        ]);
      }
      break;
    }
    case "tool": {
      if (input !== undefined)
        attributes[GenAi.toolCallArguments] =
          typeof input === "string" ? input : JSON.stringify(input);
      if (output !== undefined)
        attributes[GenAi.toolCallResult] =
          typeof output === "string" ? output : JSON.stringify(output);
      break;
    }
    case "step":
      break;
  }
}

/** Messages API messages (`{ role, content }`) as GenAI messages; anything else as one user message. */
function messagesOf(value: unknown): GenAiMessage[] {
  if (!Array.isArray(value)) return [{ role: "user", parts: partsOf(value) }];
  return value.map((message): GenAiMessage => {
    const record = (message ?? {}) as { role?: unknown; content?: unknown };
    const role = record.role === "assistant" ? "assistant" : "user";
    return { role, parts: partsOf(record.content ?? message) };
  });
}

/** Messages API content (a string or content blocks) as GenAI parts. */
export function partsOf(value: unknown): GenAiPart[] {
  if (typeof value === "string") return [{ type: "text", content: value }];
  if (!Array.isArray(value)) return [{ type: "text", content: stringOf(value) }];
  const parts: GenAiPart[] = [];
  for (const block of value as Array<Record<string, unknown>>) {
    switch (block?.type) {
      case "text":
        parts.push({ type: "text", content: stringOf(block.text) });
        break;
      case "thinking":
        if (typeof block.thinking === "string" && block.thinking !== "")
          parts.push({ type: "reasoning", content: block.thinking });
        break;
      case "redacted_thinking":
        // Encrypted by the provider: nothing a reader could use.
        break;
      case "tool_use":
        parts.push({
          type: "tool_call",
          id: stringOf(block.id),
          name: stringOf(block.name),
          arguments: block.input ?? {},
        });
        break;
      case "tool_result":
        parts.push({
          type: "tool_call_response",
          id: stringOf(block.tool_use_id),
          response: block.content ?? "",
        });
        break;
      default:
        parts.push({ type: "text", content: stringOf(block) });
    }
  }
  return parts;
}

function stringOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
