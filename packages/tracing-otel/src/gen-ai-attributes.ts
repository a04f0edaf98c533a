/**
 * Names of the OpenTelemetry GenAI semantic conventions (v1.41) that loopguard writes.
 *
 * They are kept here as our own constants, not imported from
 * `@opentelemetry/semantic-conventions`: the GenAI names are still "experimental" there and
 * move between minor releases, and a trace backend's dashboards depend on the exact strings we
 * send. Changing one of these is a breaking change of this package.
 */
export const GenAi = {
  /** `invoke_agent`, `chat` or `execute_tool`. */
  operationName: "gen_ai.operation.name",
  /** Always `anthropic` for loopguard. */
  providerName: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  /** Whether the request streamed (conditionally required when it did). */
  requestStream: "gen_ai.request.stream",
  /** Seconds from sending a streaming request to its first chunk. */
  responseTimeToFirstChunk: "gen_ai.response.time_to_first_chunk",
  responseModel: "gen_ai.response.model",
  responseId: "gen_ai.response.id",
  responseFinishReasons: "gen_ai.response.finish_reasons",
  /** Every input token, cache reads and cache writes included. */
  usageInputTokens: "gen_ai.usage.input_tokens",
  usageCacheReadInputTokens: "gen_ai.usage.cache_read.input_tokens",
  usageCacheCreationInputTokens: "gen_ai.usage.cache_creation.input_tokens",
  usageOutputTokens: "gen_ai.usage.output_tokens",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  /** Opt-in content: the tool call's arguments as JSON. */
  toolCallArguments: "gen_ai.tool.call.arguments",
  /** Opt-in content: the tool call's result as JSON. */
  toolCallResult: "gen_ai.tool.call.result",
  /** The run id. */
  conversationId: "gen_ai.conversation.id",
  agentName: "gen_ai.agent.name",
  /** The agent's stable id (loopguard's `agentId`; a child run's agent under `asTool` too). */
  agentId: "gen_ai.agent.id",
  /** Opt-in content: JSON array of `{ role, parts }` messages. */
  inputMessages: "gen_ai.input.messages",
  /** Opt-in content: JSON array of `{ role, parts, finish_reason }` messages. */
  outputMessages: "gen_ai.output.messages",
  /** The general OpenTelemetry error class attribute. */
  errorType: "error.type",
} as const;

/** Values of `gen_ai.operation.name` that loopguard writes. */
export const GenAiOperation = {
  invokeAgent: "invoke_agent",
  chat: "chat",
  executeTool: "execute_tool",
} as const;

/** The value of `gen_ai.provider.name` for Claude. */
export const anthropicProvider = "anthropic";

/** The environment variable that turns message content capture on (`true`) or off (`false`). */
export const captureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
