import type {
  Model,
  ModelRequest,
  ModelResponse,
  TextBlock,
  ToolSpec,
} from "../contracts/model.js";
import { InvalidArgumentError } from "../errors.js";
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
}

/**
 * The part of an `@anthropic-ai/sdk` client that `claudeModel` uses, so you can pass your
 * own client (a proxy, Bedrock or Vertex client, a client with custom headers).
 */
export interface ClaudeClient {
  messages: {
    create(body: any, options?: ClaudeRequestOptions): PromiseLike<unknown>;
  };
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
  /** Put prompt-cache breakpoints on the system prompt and the last tool definition. Default `true`. */
  cache?: boolean;
}

/** A Model backed by the Claude Messages API. */
export interface ClaudeModel extends Model {
  readonly name: "claude";
  readonly effort: ClaudeEffort;
  /** The exact body `create` would send for a request (for tests and debugging). */
  body(request: ModelRequest): Record<string, unknown>;
}

const ephemeral = { type: "ephemeral" } as const;

/**
 * Creates the Claude backend: a Model that sends each request through the official
 * `@anthropic-ai/sdk` (an optional peer, imported on first call) with the SDK's retries off,
 * so loopguard's retries, budgets and attempt counts stay true.
 *
 * Each request sets `output_config.effort`, leaves `tool_choice` on `auto` (forcing a tool is
 * an error on Opus 5.5), sends no `temperature`, `thinking` or prefill, and puts cache
 * breakpoints on the system prompt and the last tool. Responses come back unchanged, so
 * thinking blocks and their signatures are passed back byte for byte.
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
    const out: Record<string, unknown> = {
      model: request.model || config.model,
      max_tokens: request.max_tokens ?? config.maxTokens,
    };
    if (request.system !== undefined && request.system !== "")
      out.system = systemBlocks(request.system, config.cache);
    out.messages = request.messages;
    if (request.tools && request.tools.length > 0) {
      out.tools = toolDefinitions(request.tools, config.cache);
      out.tool_choice = choice?.type === "none" ? { type: "none" } : { type: "auto" };
    }
    if (request.stop_sequences) out.stop_sequences = request.stop_sequences;
    if (request.metadata) out.metadata = request.metadata;
    out.output_config = { effort: config.effort };
    return out;
  };

  return {
    name: "claude",
    model: config.model,
    effort: config.effort,
    defaultMaxTokens: config.maxTokens,
    body,
    async create(request, { signal }) {
      const payload = body(request);
      const api = await clientFor();
      if (signal?.aborted) throw signal.reason;
      const response = await api.messages.create(payload, {
        signal,
        maxRetries: 0,
        timeout: config.timeoutMs,
      });
      return response as ModelResponse;
    },
    classifyError: (error) => classifyClaudeError(error),
  };
}

function systemBlocks(system: string | TextBlock[], cache: boolean): TextBlock[] {
  const blocks: TextBlock[] =
    typeof system === "string"
      ? [{ type: "text", text: system }]
      : system.map((block) => ({ ...block }));
  const last = blocks[blocks.length - 1];
  if (cache && last)
    blocks[blocks.length - 1] = { ...last, cache_control: last.cache_control ?? ephemeral };
  return blocks;
}

function toolDefinitions(tools: readonly ToolSpec[], cache: boolean): ToolSpec[] {
  return tools.map((spec, index) =>
    cache && index === tools.length - 1
      ? { ...spec, cache_control: spec.cache_control ?? ephemeral }
      : spec,
  );
}

interface ResolvedOptions {
  model: string;
  effort: ClaudeEffort;
  maxTokens: number;
  client: ClaudeClient | undefined;
  apiKey: string | undefined;
  baseURL: string | undefined;
  timeoutMs: number;
  cache: boolean;
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
  if (typeof cache !== "boolean") fail(`cache must be true or false, got ${JSON.stringify(cache)}`);
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
  };
}
