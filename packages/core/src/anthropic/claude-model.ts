import type {
  CacheControl,
  ContentBlock,
  Message,
  MessageStreamEvent,
  Model,
  ModelRequest,
  ModelResponse,
  TextBlock,
  ToolSpec,
} from "../contracts/model.js";
import { InvalidArgumentError, LoopguardError } from "../errors.js";
import { createMessageAssembler, StreamProtocolError } from "../stream/assemble-message.js";
import { attachStream } from "../stream/attach-stream.js";
import { classifyClaudeError } from "./classify-claude-error.js";
import { loadSdk } from "./load-sdk.js";

/** Effort levels of `output_config.effort` (Messages API). */
export const claudeEfforts = ["low", "medium", "high", "xhigh", "max"] as const;

/** How much effort the model spends on a reply; higher is more thorough and slower. */
export type ClaudeEffort = (typeof claudeEfforts)[number];

/** Per-request options loopguard passes to `messages.create` (a subset of the SDK's). */
export interface ClaudeRequestOptions {
  signal?: AbortSignal;
  timeout?: number;
  maxRetries?: number;
  /** Extra headers (`anthropic-beta` for a client without a beta resource). */
  headers?: Record<string, string>;
}

/** The beta header of server-side context editing (`context_management`). */
export const contextManagementBeta = "context-management-2025-06-27";

/**
 * The part of an `@anthropic-ai/sdk` client that `claudeModel` uses, so you can pass your
 * own client (a proxy, Bedrock or Vertex client, a client with custom headers).
 */
export interface ClaudeClient {
  /** The SDK's beta resource; used for requests with server-side context edits (`betas`), when present. */
  beta?: {
    messages?: {
      create(body: any, options?: ClaudeRequestOptions): PromiseLike<unknown>;
      countTokens?(
        body: any,
        options?: ClaudeRequestOptions,
      ): PromiseLike<{ input_tokens: number }>;
    };
  };
  messages: {
    /** With `stream: true` in the body it resolves to an async iterable of stream events (the SDK's `Stream`). */
    create(body: any, options?: ClaudeRequestOptions): PromiseLike<unknown>;
    /** `POST /v1/messages/count_tokens`; optional (used only by `countTokens`). */
    countTokens?(body: any, options?: ClaudeRequestOptions): PromiseLike<{ input_tokens: number }>;
  };
}

/**
 * Extended thinking: `adaptive` lets the model decide when and how much to think (the mode of
 * current models); `enabled` with `budgetTokens` is the older manual mode (models up to the
 * 4.5 generation, deprecated on 4.6, refused by later models). See the README's table.
 */
export type ClaudeThinking = { type: "adaptive" } | { type: "enabled"; budgetTokens: number };

/**
 * Context windows (the most prompt tokens of one request) of Claude models, from the Claude
 * docs' model overview pages, checked 2026-12-01. A dated id (`-20261001`) takes its family's.
 */
export const claudeContextWindows: Readonly<Record<string, number>> = Object.freeze({
  "claude-opus-5-5": 1_000_000,
  "claude-sonnet-5-5": 1_000_000,
  "claude-opus-5": 1_000_000,
  "claude-sonnet-5": 1_000_000,
  "claude-haiku-4-5": 200_000,
});

/** The context window of a Claude model id, or `undefined` when the table does not know it. */
export function claudeContextWindow(model: string): number | undefined {
  if (/\[1m\]$/.test(model)) return 1_000_000;
  return claudeContextWindows[model] ?? claudeContextWindows[model.replace(/-\d{8}$/, "")];
}

/** The prompt cache: `true` (5-minute breakpoints), `false`, or a TTL for every breakpoint. */
export type ClaudeCache = boolean | { ttl: "5m" | "1h" };

/** No API key could be found for the Claude backend. */
export class MissingApiKeyError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.MissingApiKeyError";
  constructor(options?: { cause?: unknown }) {
    super(
      "missing_api_key",
      "[core] claudeModel has no API key: set ANTHROPIC_API_KEY (create one at https://platform.claude.com/settings/keys) or pass claudeModel({ apiKey }). To run without a key (offline): use scriptedModel([...]) from @loopguard/core/testing, or the CLI's offline commands (loopguard demo, loopguard eval without --live).",
      options,
    );
  }
}

/** Options of {@link claudeModel}. */
export interface ClaudeModelOptions {
  /** The model id. Default `claude-opus-5-5`. */
  model?: string;
  /** `output_config.effort`. Default `medium`. */
  effort?: ClaudeEffort;
  /** `max_tokens` when the agent does not say. Default 16 000. */
  maxTokens?: number;
  /** A client to use instead of one made from `apiKey` and `baseURL`; its own retries are turned off per request. */
  client?: ClaudeClient;
  /** Default: the SDK's own lookup (`ANTHROPIC_API_KEY`, then profiles). */
  apiKey?: string;
  /** Default: the SDK's (`ANTHROPIC_BASE_URL`, then `https://api.anthropic.com`). */
  baseURL?: string;
  /** Milliseconds before one HTTP attempt is abandoned (a retryable `APIConnectionTimeoutError`). Default 600 000. */
  timeoutMs?: number;
  /**
   * Prompt-cache breakpoints on the system prompt, the last tool definition and the
   * conversation's moving tail (the last user turn, and the one before it so the previous
   * step's entry is always within the API's 20-block lookback): at most 4 in all.
   * `true` (default) uses 5-minute entries; `{ ttl: "1h" }` one-hour entries (dearer writes,
   * for runs that pause longer than 5 minutes, e.g. on approvals); `false` sends none.
   */
  cache?: ClaudeCache;
  /** Extended thinking; default: the model's own default (Claude Opus 5.5 always thinks adaptively). */
  thinking?: ClaudeThinking;
  /**
   * The model's context window in prompt tokens, for models the built-in table
   * (`claudeContextWindows`) does not know or to manage a smaller window on purpose.
   */
  contextWindow?: number;
  /**
   * Whether the model applies server-side context edits (`context_management`, beta
   * `context-management-2025-06-27`): `claudeModel` then reports
   * `serverContextEdits: ["clear_tool_uses_20250919"]`, and the loop sends the clearing of
   * `contextWindow.clearToolResults: { where: "server" }` to the API. Default `true`; `false`
   * for a backend or proxy that does not take the beta (the loop then clears on the client).
   */
  serverContextEdits?: boolean;
  /**
   * Send streaming requests (`"stream": true`), also from `create()`, which assembles the
   * events. Default `true`: long turns show signs of life, and proxies do not cut idle
   * non-streaming calls.
   */
  stream?: boolean;
}

/** A Model backed by the Claude Messages API. */
export interface ClaudeModel extends Model {
  readonly name: "claude";
  readonly effort: ClaudeEffort;
  /** The exact body `create` would send for a request (for tests and debugging). */
  body(request: ModelRequest): Record<string, unknown>;
  /** Streams one call: yields the Messages API events as the SDK parses them. */
  stream(
    request: ModelRequest,
    options: { signal: AbortSignal },
  ): AsyncIterable<MessageStreamEvent>;
}

/**
 * Creates the Claude backend: a Model that sends each request through the official
 * `@anthropic-ai/sdk` (an optional peer, imported on first call) with the SDK's retries off,
 * so loopguard's retries, budgets and attempt counts stay true.
 *
 * Each request streams (`"stream": true`; `create()` assembles the events), sets
 * `output_config.effort`, leaves `tool_choice` on `auto` (forcing a tool is an error on Opus
 * 5.5), sends no `temperature` or prefill, sends `thinking` only when asked, and puts cache
 * breakpoints on the system prompt, the last tool and the conversation's moving tail.
 * Responses come back unchanged, so thinking blocks and their signatures are passed back byte
 * for byte. Without an API key the first call fails with {@link MissingApiKeyError}.
 *
 * @example
 * const agent = createAgent({ model: claudeModel({ effort: "high" }), tools: [lookupOrder] });
 */
export function claudeModel(options: ClaudeModelOptions = {}): ClaudeModel {
  const config = validateOptions(options);
  let client: ClaudeClient | undefined = config.client;
  let creating: Promise<ClaudeClient> | undefined;
  const clientFor = async (): Promise<ClaudeClient> => {
    if (client) return client;
    creating ??= loadSdk("claudeModel").then((sdk) => {
      client = new sdk.default({
        ...(config.apiKey !== undefined ? { apiKey: config.apiKey } : {}),
        ...(config.baseURL !== undefined ? { baseURL: config.baseURL } : {}),
        maxRetries: 0,
        timeout: config.timeoutMs,
      }) as unknown as ClaudeClient;
      return client;
    });
    try {
      return await creating;
    } catch (error) {
      creating = undefined;
      throw error;
    }
  };

  const body = (request: ModelRequest): Record<string, unknown> => {
    if (!request || typeof request !== "object" || !Array.isArray(request.messages)) {
      throw new InvalidArgumentError(
        "[core] claudeModel.create(request): request must be a Messages API request with a messages array",
      );
    }
    const choice = request.tool_choice;
    if (choice && choice.type !== "auto" && choice.type !== "none") {
      throw new InvalidArgumentError(
        `[core] claudeModel: tool_choice ${JSON.stringify(choice)} forces a tool, which Claude Opus 5.5 rejects with thinking on; leave tool_choice on auto and say in the prompt which tool to use`,
      );
    }
    const modelId = request.model || config.model;
    const maxTokens = request.max_tokens ?? config.maxTokens;
    const out: Record<string, unknown> = { model: modelId, max_tokens: maxTokens };
    const cache = config.cache;
    const hasSystem = request.system !== undefined && request.system !== "";
    const hasTools = Boolean(request.tools && request.tools.length > 0);
    // Breakpoints the caller set count against the API's limit of 4.
    const own = countBreakpoints(request);
    let left = 4 - own;
    const take = (): boolean => {
      if (!cache || left <= 0) return false;
      left -= 1;
      return true;
    };
    if (hasSystem) out.system = systemBlocks(request.system!, take() ? cache : undefined);
    if (hasTools) {
      out.tools = toolDefinitions(request.tools!, take() ? cache : undefined);
      out.tool_choice = choice?.type === "none" ? { type: "none" } : { type: "auto" };
    }
    out.messages = cache ? withTailBreakpoints(request.messages, cache, left) : request.messages;
    if (request.stop_sequences) out.stop_sequences = request.stop_sequences;
    if (request.metadata) out.metadata = request.metadata;
    if (request.context_management) {
      if (!config.serverContextEdits)
        throw new InvalidArgumentError(
          '[core] claudeModel: the request has context_management but this model was made with serverContextEdits: false; leave the edits to the loop (contextWindow.clearToolResults.where: "client")',
        );
      out.context_management = request.context_management;
    }
    const thinking = thinkingFor(modelId, config.thinking, maxTokens);
    if (thinking) out.thinking = thinking;
    out.output_config = { effort: config.effort };
    if (config.stream) out.stream = true;
    return out;
  };

  const send = async (payload: Record<string, unknown>, signal: AbortSignal) => {
    const api = await clientFor();
    if (signal?.aborted) throw signal.reason;
    const options = { signal, maxRetries: 0, timeout: config.timeoutMs };
    try {
      if (payload.context_management === undefined)
        return await api.messages.create(payload, options);
      // Server-side context editing is a beta: through the SDK's beta resource (`betas` becomes
      // the anthropic-beta header), or the header itself for a client without one.
      const beta = api.beta?.messages;
      if (typeof beta?.create === "function")
        return await beta.create({ ...payload, betas: [contextManagementBeta] }, options);
      return await api.messages.create(payload, {
        ...options,
        headers: { "anthropic-beta": contextManagementBeta },
      });
    } catch (error) {
      throw translate(error);
    }
  };

  async function* stream(
    request: ModelRequest,
    { signal }: { signal: AbortSignal },
  ): AsyncGenerator<MessageStreamEvent> {
    const payload = { ...body(request), stream: true };
    const events = (await send(payload, signal)) as AsyncIterable<MessageStreamEvent>;
    if (
      !events ||
      typeof (events as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] !== "function"
    ) {
      throw new InvalidArgumentError(
        "[core] claudeModel: the client answered a streaming request without a stream; pass an @anthropic-ai/sdk client",
      );
    }
    try {
      for await (const event of events) yield event;
    } catch (error) {
      // The SDK parses each SSE `data:` line with JSON.parse and throws its SyntaxError.
      if (error instanceof SyntaxError)
        throw new StreamProtocolError(
          "malformed_stream",
          true,
          `[core] the model's stream sent an event that is not JSON (${error.message}); the step is retried`,
          { cause: error },
        );
      throw error;
    }
    // The SDK ends a stream quietly when its request is aborted: say so, so nobody takes the
    // partial stream for a cut connection.
    if (signal.aborted) {
      const sdk = await loadSdk("claudeModel");
      throw new sdk.APIUserAbortError();
    }
  }

  const claude: Omit<ClaudeModel, "stream"> = {
    name: "claude",
    model: config.model,
    effort: config.effort,
    defaultMaxTokens: config.maxTokens,
    ...(config.contextWindow !== undefined ? { contextWindow: config.contextWindow } : {}),
    ...(config.serverContextEdits ? { serverContextEdits: ["clear_tool_uses_20250919"] } : {}),
    body,
    async countTokens(request, { signal }) {
      const api = await clientFor();
      if (typeof api.messages.countTokens !== "function")
        throw new InvalidArgumentError(
          "[core] claudeModel.countTokens: the client has no messages.countTokens; pass an @anthropic-ai/sdk client",
        );
      // count_tokens takes the prompt fields only.
      const {
        max_tokens: _max,
        stream: _stream,
        output_config: _effort,
        metadata: _metadata,
        stop_sequences: _stops,
        ...countable
      } = body(request);
      if (signal?.aborted) throw signal.reason;
      const options = { signal, maxRetries: 0, timeout: config.timeoutMs };
      try {
        // With context_management the count is of the prompt after the server's edits.
        const beta = api.beta?.messages;
        const counted =
          countable.context_management === undefined
            ? await api.messages.countTokens(countable, options)
            : typeof beta?.countTokens === "function"
              ? await beta.countTokens({ ...countable, betas: [contextManagementBeta] }, options)
              : await api.messages.countTokens(countable, {
                  ...options,
                  headers: { "anthropic-beta": contextManagementBeta },
                });
        return counted.input_tokens;
      } catch (error) {
        throw translate(error);
      }
    },
    async create(request, { signal }) {
      if (config.stream) {
        const assembler = createMessageAssembler();
        for await (const event of stream(request, { signal })) assembler.push(event);
        return assembler.finish();
      }
      return (await send(body(request), signal)) as ModelResponse;
    },
    classifyError: (error) => classifyClaudeError(error),
  };
  return attachStream(claude, stream);
}

/** The SDK's "Could not resolve authentication method" becomes a message that says what to do. */
function translate(error: unknown): unknown {
  if (error instanceof Error && /Could not resolve authentication method/.test(error.message))
    return new MissingApiKeyError({ cause: error });
  return error;
}

function breakpointOf(cache: ClaudeCache): CacheControl {
  return typeof cache === "object" && cache.ttl === "1h"
    ? { type: "ephemeral", ttl: "1h" }
    : { type: "ephemeral" };
}

function systemBlocks(system: string | TextBlock[], cache: ClaudeCache | undefined): TextBlock[] {
  const blocks: TextBlock[] =
    typeof system === "string"
      ? [{ type: "text", text: system }]
      : system.map((block) => ({ ...block }));
  const last = blocks[blocks.length - 1];
  if (cache && last)
    blocks[blocks.length - 1] = {
      ...last,
      cache_control: last.cache_control ?? breakpointOf(cache),
    };
  return blocks;
}

function toolDefinitions(tools: readonly ToolSpec[], cache: ClaudeCache | undefined): ToolSpec[] {
  return tools.map((spec, index) =>
    cache && index === tools.length - 1
      ? { ...spec, cache_control: spec.cache_control ?? breakpointOf(cache) }
      : spec,
  );
}

function countBreakpoints(request: ModelRequest): number {
  let count = 0;
  const seen = (value: unknown) => {
    if (value && typeof value === "object" && (value as { cache_control?: unknown }).cache_control)
      count += 1;
  };
  if (Array.isArray(request.system)) request.system.forEach(seen);
  request.tools?.forEach(seen);
  for (const message of request.messages)
    if (Array.isArray(message.content)) message.content.forEach(seen);
  return count;
}

/** Thinking blocks cannot carry a breakpoint (the API refuses it). */
const uncacheable = new Set(["thinking", "redacted_thinking"]);

/**
 * Puts breakpoints on the conversation's moving tail: the last block of the last user turn
 * and of the user turn before it. Each step reads the prefix the previous step wrote and
 * writes one that reaches its own tail. Only the marked blocks are copied: every other block,
 * thinking blocks above all, goes out as the same object.
 */
function withTailBreakpoints(messages: Message[], cache: ClaudeCache, left: number): Message[] {
  if (left <= 0) return messages;
  const out = messages.slice();
  let placed = 0;
  for (let index = out.length - 1; index >= 0 && placed < Math.min(2, left); index -= 1) {
    const message = out[index]!;
    if (message.role !== "user") continue;
    if (typeof message.content === "string") {
      if (message.content === "") continue;
      out[index] = {
        role: message.role,
        content: [{ type: "text", text: message.content, cache_control: breakpointOf(cache) }],
      };
      placed += 1;
      continue;
    }
    const blocks = message.content;
    const at = blocks.findLastIndex((block) => !uncacheable.has(block.type));
    if (at < 0) continue;
    const block = blocks[at]! as ContentBlock & { cache_control?: CacheControl };
    if (block.cache_control) continue;
    const content = blocks.slice();
    content[at] = { ...block, cache_control: breakpointOf(cache) } as ContentBlock;
    out[index] = { role: message.role, content };
    placed += 1;
  }
  return out;
}

/**
 * Which thinking settings each model takes (Claude docs, "Extended thinking" and
 * "Troubleshooting thinking", checked 2026-12-01): the manual `enabled` mode is refused
 * (400) from Claude Opus 4.7, Sonnet 5 and Fable 5 on, and the only mode up to the 4.5
 * generation; Opus 5.5 always thinks.
 */
function thinkingFor(
  model: string,
  thinking: ClaudeThinking | undefined,
  maxTokens: number,
): Record<string, unknown> | undefined {
  if (!thinking) return undefined;
  const family = thinkingFamily(model);
  if (thinking.type === "adaptive") {
    if (family === "manual-only")
      throw new InvalidArgumentError(
        `[core] claudeModel: ${model} does not support adaptive thinking (models up to the 4.5 generation think only in the manual mode); use thinking: { type: "enabled", budgetTokens: 4096 }`,
      );
    return { type: "adaptive" };
  }
  if (family === "adaptive-only")
    throw new InvalidArgumentError(
      `[core] claudeModel: ${model} refuses thinking.type "enabled" with a token budget (a 400 from the API: Opus 4.7 and later, Sonnet 5 and later, Fable 5 and later think adaptively); use thinking: { type: "adaptive" } and set effort to steer how much it thinks`,
    );
  // budget_tokens must be at least 1 024 and below max_tokens; the loop may lower max_tokens
  // to fit a budget, so the thinking budget follows it down.
  const budget = Math.min(thinking.budgetTokens, maxTokens - 1);
  if (budget < 1024)
    throw new InvalidArgumentError(
      `[core] claudeModel: thinking needs max_tokens above 1 024 plus room to answer, but this request allows ${maxTokens}; raise maxTokens (or the run's USD budget) or turn thinking off`,
    );
  return { type: "enabled", budget_tokens: budget };
}

function thinkingFamily(model: string): "adaptive-only" | "manual-only" | "both" | "unknown" {
  const match = /^claude-(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d))?(?:\b|-)/.exec(model);
  if (!match) return "unknown";
  const [, name, majorText, minorText] = match;
  const version = Number(majorText) + Number(minorText ?? 0) / 10;
  if (version >= 5 || (name === "opus" && version >= 4.7)) return "adaptive-only";
  if (version >= 4.6) return "both";
  return "manual-only";
}

interface ResolvedOptions {
  model: string;
  effort: ClaudeEffort;
  maxTokens: number;
  client: ClaudeClient | undefined;
  apiKey: string | undefined;
  baseURL: string | undefined;
  timeoutMs: number;
  cache: ClaudeCache;
  thinking: ClaudeThinking | undefined;
  stream: boolean;
  contextWindow: number | undefined;
  serverContextEdits: boolean;
}

function validateOptions(options: ClaudeModelOptions): ResolvedOptions {
  const fail = (message: string): never => {
    throw new InvalidArgumentError(`[core] claudeModel: ${message}`);
  };
  if (options === null || typeof options !== "object")
    fail('options must be an object, e.g. claudeModel({ effort: "high" })');
  const model = options.model ?? "claude-opus-5-5";
  if (typeof model !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]{0,127}$/.test(model)) {
    fail(`model must be a model id such as "claude-opus-5-5", got ${JSON.stringify(model)}`);
  }
  const effort = options.effort ?? "medium";
  if (!claudeEfforts.includes(effort))
    fail(`effort must be one of ${claudeEfforts.join(", ")}, got ${JSON.stringify(effort)}`);
  const maxTokens = options.maxTokens ?? 16_000;
  if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > 1_000_000) {
    fail(
      `maxTokens must be a positive integer number of output tokens (e.g. 16000), got ${JSON.stringify(maxTokens)}`,
    );
  }
  const timeoutMs = options.timeoutMs ?? 600_000;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    fail(`timeoutMs must be a positive number of milliseconds, got ${JSON.stringify(timeoutMs)}`);
  }
  const cache = options.cache ?? true;
  if (
    typeof cache !== "boolean" &&
    !(
      cache &&
      typeof cache === "object" &&
      (cache.ttl === "5m" || cache.ttl === "1h") &&
      Object.keys(cache).length === 1
    )
  )
    fail(`cache must be true, false, { ttl: "5m" } or { ttl: "1h" }, got ${JSON.stringify(cache)}`);
  const thinking = options.thinking;
  if (thinking !== undefined) {
    const valid =
      thinking &&
      typeof thinking === "object" &&
      (thinking.type === "adaptive" ||
        (thinking.type === "enabled" &&
          Number.isInteger(thinking.budgetTokens) &&
          thinking.budgetTokens >= 1024));
    if (!valid)
      fail(
        `thinking must be { type: "adaptive" } or { type: "enabled", budgetTokens } with budgetTokens an integer of at least 1024, got ${JSON.stringify(thinking)}`,
      );
    thinkingFor(model, thinking, Number.MAX_SAFE_INTEGER);
  }
  const stream = options.stream ?? true;
  if (typeof stream !== "boolean")
    fail(`stream must be true or false, got ${JSON.stringify(stream)}`);
  const contextWindow = options.contextWindow ?? claudeContextWindow(model);
  if (contextWindow !== undefined && (!Number.isSafeInteger(contextWindow) || contextWindow < 1))
    fail(
      `contextWindow must be a positive whole number of tokens (e.g. 200000), got ${JSON.stringify(options.contextWindow)}`,
    );
  const serverContextEdits = options.serverContextEdits ?? true;
  if (typeof serverContextEdits !== "boolean")
    fail(`serverContextEdits must be true or false, got ${JSON.stringify(serverContextEdits)}`);
  if (options.client !== undefined && typeof options.client?.messages?.create !== "function") {
    fail(
      "client must be an @anthropic-ai/sdk client (new Anthropic(...)) or anything with messages.create(body, options)",
    );
  }
  if (
    options.client !== undefined &&
    (options.apiKey !== undefined || options.baseURL !== undefined)
  ) {
    fail(
      "pass either client or apiKey/baseURL, not both: apiKey and baseURL configure the client claudeModel makes",
    );
  }
  if (
    options.apiKey !== undefined &&
    (typeof options.apiKey !== "string" || options.apiKey.trim() === "")
  )
    fail("apiKey must be a non-empty string");
  if (options.baseURL !== undefined) {
    try {
      new URL(options.baseURL);
    } catch {
      fail(
        `baseURL must be an absolute URL such as https://api.anthropic.com, got ${JSON.stringify(options.baseURL)}`,
      );
    }
  }
  return {
    model,
    effort,
    maxTokens,
    client: options.client,
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    timeoutMs,
    cache,
    thinking,
    stream,
    contextWindow,
    serverContextEdits,
  };
}
