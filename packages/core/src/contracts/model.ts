/**
 * The Model contract: one call to a Messages-API-shaped model.
 *
 * Requests and responses have the shape of the Anthropic Messages API so a recorded
 * conversation can be replayed byte for byte. An implementation must not retry on its own
 * (loopguard owns retries so budgets and attempt counts stay true): it either resolves with
 * a response or rejects with the error it got. Errors are classified by `classifyError` when
 * the implementation provides it, and by status code and name otherwise.
 */

/** A text block. */
export interface TextBlock {
  type: "text";
  text: string;
  citations?: unknown;
  cache_control?: CacheControl;
}

/** A thinking block; its signature binds it to the model and conversation, pass it back unchanged. */
export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  signature: string;
}

/** A redacted thinking block; pass it back unchanged. */
export interface RedactedThinkingBlock {
  type: "redacted_thinking";
  data: string;
}

/** A tool call requested by the model. */
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** The result of one tool call, sent back in a user turn. */
export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: string | TextBlock[];
  is_error?: boolean;
  cache_control?: CacheControl;
}

/** A cache breakpoint. */
export interface CacheControl {
  type: "ephemeral";
  ttl?: "5m" | "1h";
}

/** Any block a response may hold; unknown block types are kept and passed back as they came. */
export type ContentBlock =
  | TextBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | ToolUseBlock
  | ToolResultBlock;

/** One turn of the conversation. */
export interface Message {
  role: "user" | "assistant";
  content: string | ContentBlock[];
}

/** A tool definition as the Messages API takes it. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  strict?: boolean;
  cache_control?: CacheControl;
}

/** Why the model stopped. */
export type StopReason =
  | "end_turn"
  | "tool_use"
  | "pause_turn"
  | "max_tokens"
  | "refusal"
  | "stop_sequence"
  | "model_context_window_exceeded";

/** Token usage of one response, cache tokens included. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: {
    ephemeral_5m_input_tokens?: number;
    ephemeral_1h_input_tokens?: number;
  } | null;
}

/** A request to the model. */
export interface ModelRequest {
  model: string;
  max_tokens: number;
  system?: string | TextBlock[];
  messages: Message[];
  tools?: ToolSpec[];
  tool_choice?: { type: "auto" | "any" | "none" | "tool"; name?: string };
  metadata?: { user_id?: string };
  stop_sequences?: string[];
}

/** A response from the model. */
export interface ModelResponse {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason | null;
  stop_sequence?: string | null;
  usage: Usage;
}

/** How loopguard should treat an error thrown by a model call. */
export interface ErrorClassification {
  /** `true` for 429, 5xx, 529 and connection errors. */
  retryable: boolean;
  /** A short stable name: `rate_limit`, `overloaded`, `server_error`, `connection`, `bad_request`, ... */
  kind: string;
  /** The HTTP status, when there was one. */
  status?: number;
  /** The wait the server asked for (`retry-after-ms` or `retry-after`), in milliseconds. */
  retryAfterMs?: number;
}

/** Options for one model call. */
export interface ModelCallOptions {
  /** Aborted when the run is cancelled or its wall clock runs out. */
  signal: AbortSignal;
}

/**
 * A model: anything that turns a Messages API request into a response.
 *
 * Failure rule: `create` rejects with the underlying error and never retries by itself; the
 * runtime classifies the error (with `classifyError` when given) and decides whether to retry.
 */
export interface Model {
  /** A name for diagnostics, e.g. `claude` or `scripted`. */
  readonly name: string;
  /** The model id sent in requests and used to look up prices. */
  readonly model: string;
  /** The `max_tokens` to ask for when the agent does not say. */
  readonly defaultMaxTokens?: number;
  /** Makes one call. */
  create(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse>;
  /** Classifies an error this model threw; optional, the runtime falls back to status codes. */
  classifyError?(error: unknown): ErrorClassification;
}
