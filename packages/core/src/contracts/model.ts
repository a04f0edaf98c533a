/**
 * The Model contract: one call to a Messages-API-shaped model.
 *
 * Requests and responses have the shape of the Anthropic Messages API so a recorded
 * conversation can be replayed byte for byte. An implementation must not retry on its own
 * (loopguard owns retries so budgets and attempt counts stay true): it either resolves with
 * a response or rejects with the error it got. Errors are classified by `classifyError` when
 * the implementation provides it, and by status code and name otherwise. A model may also
 * stream (`stream()`), yielding the API's server-sent events; `assembleMessage` turns them
 * back into the whole response.
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
  cache_control?: CacheControl;
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

/**
 * A server-side context edit of the Messages API (`context_management.edits`, beta
 * `context-management-2025-06-27`): past `trigger` prompt tokens the API replaces the results
 * of tool uses older than the last `keep` with a placeholder before the model reads the prompt.
 * The request's bytes do not change.
 */
export interface ClearToolUsesEdit {
  type: "clear_tool_uses_20250919";
  /** When the edit applies. API default: 100 000 input tokens. */
  trigger?: { type: "input_tokens" | "tool_uses"; value: number };
  /** Tool uses kept whole (the most recent). API default: 3. */
  keep?: { type: "tool_uses"; value: number };
  /** Apply only when at least this many tokens go (a cache write must be worth it). */
  clear_at_least?: { type: "input_tokens"; value: number };
  /** Tools whose uses are never cleared. */
  exclude_tools?: string[];
  /** Also clear the tool-use inputs (all, or those of the named tools). */
  clear_tool_inputs?: boolean | string[];
}

/** What the API reports it cleared for one edit (`context_management.applied_edits`). */
export interface AppliedContextEdit {
  /** `clear_tool_uses_20250919`, or a type newer than this contract (kept as it came). */
  type: string;
  /** Prompt tokens the edit removed from what the model read. */
  cleared_input_tokens: number;
  /** Tool uses whose results were cleared (`clear_tool_uses_20250919`). */
  cleared_tool_uses?: number;
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
  /**
   * Server-side context edits; sent only to a model whose `serverContextEdits` lists each
   * edit's type (`claudeModel` adds the beta header).
   */
  context_management?: { edits: ClearToolUsesEdit[] };
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
  /** The server-side context edits the API applied to this request's prompt, when it was asked for any. */
  context_management?: { applied_edits: AppliedContextEdit[] } | null;
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

/** A text fragment of a `text` block. */
export interface TextDelta {
  type: "text_delta";
  text: string;
}

/** A fragment of a tool call's input, as JSON text; only `content_block_stop` makes it whole. */
export interface InputJsonDelta {
  type: "input_json_delta";
  partial_json: string;
}

/** A fragment of a `thinking` block. */
export interface ThinkingDelta {
  type: "thinking_delta";
  thinking: string;
}

/** The signature of a `thinking` block, sent just before the block stops. */
export interface SignatureDelta {
  type: "signature_delta";
  signature: string;
}

/** A citation added to a `text` block. */
export interface CitationsDelta {
  type: "citations_delta";
  citation: unknown;
}

/** Any delta a `content_block_delta` event carries. */
export type ContentBlockDelta =
  | TextDelta
  | InputJsonDelta
  | ThinkingDelta
  | SignatureDelta
  | CitationsDelta;

/** The usage a `message_delta` event reports: cumulative counts, `output_tokens` always. */
export interface MessageDeltaUsage {
  output_tokens: number;
  input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/**
 * One event of a streamed Messages API response, in the order the API sends them:
 * `message_start`, then per block `content_block_start`, `content_block_delta`...,
 * `content_block_stop`, then `message_delta` (stop reason, final usage) and `message_stop`.
 * `ping` may come anywhere. A mid-stream `error` event is not yielded: the stream throws it.
 */
export type MessageStreamEvent =
  | { type: "message_start"; message: ModelResponse }
  | { type: "content_block_start"; index: number; content_block: ContentBlock }
  | { type: "content_block_delta"; index: number; delta: ContentBlockDelta }
  | { type: "content_block_stop"; index: number }
  | {
      type: "message_delta";
      delta: { stop_reason: StopReason | null; stop_sequence?: string | null };
      usage: MessageDeltaUsage;
      /** The server-side context edits applied to the prompt (when the request asked for any). */
      context_management?: { applied_edits: AppliedContextEdit[] } | null;
    }
  | { type: "message_stop" }
  | { type: "ping" };

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
  /**
   * The most prompt tokens one request may carry (the model's context window), when the model
   * knows it. `createAgent({ contextWindow })` manages the conversation against it unless
   * `contextWindow.maxInputTokens` says otherwise.
   */
  readonly contextWindow?: number;
  /**
   * Counts a request's prompt tokens exactly (the Messages API's count-tokens endpoint).
   * Optional; the loop asks only when its local estimate is within 5% of the window. Failure
   * rule: rejects with the error it got; the loop then keeps its estimate.
   */
  countTokens?(request: ModelRequest, options: ModelCallOptions): Promise<number>;
  /**
   * The server-side context edit types this model applies (`context_management.edits`), e.g.
   * `["clear_tool_uses_20250919"]`. Optional: absent means none, and the loop makes the same
   * edit on the client. A model that lists a type must send the edits of a request and return
   * what the server applied in `ModelResponse.context_management`.
   */
  readonly serverContextEdits?: readonly string[];
  /** Makes one call. */
  create(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse>;
  /**
   * Makes one streaming call: yields the Messages API stream events as they arrive.
   *
   * Optional: the runtime calls `create()` when it is missing. Failure rule: the iterator
   * throws the error it got (an HTTP error before the first event, or a mid-stream `error`
   * event such as `overloaded_error`) and never retries; a stream that ends without
   * `message_stop` is treated by the runtime as cut and retried. Breaking out of the loop or
   * aborting `signal` must close the connection. loopguard's own models define it as a
   * non-enumerable property (`attachStream`), so a wrapper that spreads a model and replaces
   * `create` keeps intercepting every call.
   */
  stream?(request: ModelRequest, options: ModelCallOptions): AsyncIterable<MessageStreamEvent>;
  /** Classifies an error this model threw; optional, the runtime falls back to status codes. */
  classifyError?(error: unknown): ErrorClassification;
}
