import type {
  ContentBlock,
  MessageStreamEvent,
  Model,
  ModelRequest,
  ModelResponse,
  StopReason,
  Usage,
} from "../contracts/model.js";
import { InvalidArgumentError } from "../errors.js";
import { requestBytes } from "../pricing.js";
import { sleep } from "../retry.js";
import { assembleMessage, messageEvents } from "../stream/assemble-message.js";
import { attachStream } from "../stream/attach-stream.js";

/** One scripted reply: any part of a Messages API response; the rest is filled in. */
export interface ScriptedReply {
  content?: ContentBlock[] | string;
  stop_reason?: StopReason | null;
  usage?: Partial<Usage>;
  id?: string;
  model?: string;
  /** Throw this instead of answering. */
  error?: unknown;
  /** Wait this long before answering (honours the call's signal). */
  delayMs?: number;
  /**
   * Stream exactly these events instead of events made from the reply (`create()` assembles
   * them), to test what a model does with a malformed or unusual stream.
   */
  events?: readonly MessageStreamEvent[];
  /** When streaming, wait this long between events (honours the call's signal). */
  eventDelayMs?: number;
}

/** Options of {@link scriptedModel}. */
export interface ScriptedModelOptions {
  /** The model id. Default `claude-sonnet-5-5`. */
  model?: string;
  /** Keep a deep copy of every request in `requests`. Default `true`. */
  copyRequests?: boolean;
  /** Characters of text per streamed delta. Default 16. */
  chunkChars?: number;
  /** The context window the model reports (`Model.contextWindow`), in prompt tokens. Default: none. */
  contextWindow?: number;
  /** Leave out `stream()`, so the runtime calls `create()` (a model that cannot stream). Default `false`. */
  noStream?: boolean;
}

/** A script: a list of replies, or a function of the request and the call number (1-based). */
export type Script =
  | readonly (
      | ScriptedReply
      | ((request: ModelRequest, call: number) => ScriptedReply | Promise<ScriptedReply>)
    )[]
  | ((request: ModelRequest, call: number) => ScriptedReply | Promise<ScriptedReply>);

/** A scripted model: records every request it got. */
export interface ScriptedModel extends Model {
  /** Every request, deep-copied as received. */
  readonly requests: ModelRequest[];
  /** Calls made so far. */
  readonly calls: number;
}

/**
 * A model that answers from a script, for offline runs and tests. Replies are in the Messages
 * API shape; what is left out is filled in: `stop_reason` (`tool_use` when the content has a
 * tool call, else `end_turn`), `usage` (input tokens from the request size, output tokens from
 * the content size, never above `max_tokens`), `id` and `model`. It streams too: `stream()`
 * yields the events the API would send for the reply (text in `chunkChars` pieces, tool input
 * as `input_json_delta` fragments), or a reply's own `events`.
 *
 * @example
 * const model = scriptedModel([
 *   { content: [{ type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1001" } }] },
 *   { content: "Your refund is on its way." },
 * ]);
 */
export function scriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel {
  if (!Array.isArray(script) && typeof script !== "function") {
    throw new InvalidArgumentError(
      "[core] scriptedModel(script): script must be an array of replies or a function (request, call) => reply",
    );
  }
  const requests: ModelRequest[] = [];
  let calls = 0;
  const modelId = options.model ?? "claude-sonnet-5-5";
  const copy = options.copyRequests ?? true;
  const window = options.contextWindow;
  if (window !== undefined && (!Number.isSafeInteger(window) || window < 1))
    throw new InvalidArgumentError(
      `[core] scriptedModel: contextWindow must be a positive whole number of tokens, got ${JSON.stringify(window)}`,
    );
  const model: ScriptedModel = {
    name: "scripted",
    model: modelId,
    ...(window !== undefined ? { contextWindow: window } : {}),
    get requests() {
      return requests;
    },
    get calls() {
      return calls;
    },
    create: async (request, { signal }) => {
      const { reply, call } = await next(request, signal);
      if (reply.events) return assembleMessage(fromList(reply.events, 0, signal));
      return fillReply(reply, request, modelId, call);
    },
  };
  if (options.noStream) return model;
  return attachStream(model, async function* stream(request, { signal }) {
    const { reply, call } = await next(request, signal);
    const events =
      reply.events ??
      messageEvents(fillReply(reply, request, modelId, call), {
        ...(options.chunkChars !== undefined ? { chunkChars: options.chunkChars } : {}),
      });
    yield* fromList(events, reply.eventDelayMs ?? 0, signal);
  });

  async function next(request: ModelRequest, signal: AbortSignal) {
    calls += 1;
    const call = calls;
    if (copy) requests.push(structuredClone(request));
    let entry:
      | ScriptedReply
      | ((request: ModelRequest, call: number) => ScriptedReply | Promise<ScriptedReply>)
      | undefined;
    if (typeof script === "function") entry = script;
    else entry = script[call - 1];
    if (entry === undefined) {
      throw new InvalidArgumentError(
        `[core] scriptedModel: the script has ${(script as readonly unknown[]).length} replies but the model was called for reply ${call}; add replies or end the script with a final answer (a reply without tool_use)`,
      );
    }
    const reply = typeof entry === "function" ? await entry(request, call) : entry;
    // The retry module's sleep removes its abort listener when the wait ends.
    if (reply.delayMs) await sleep(reply.delayMs, signal);
    if (signal.aborted) throw signal.reason;
    if (reply.error !== undefined) throw reply.error;
    return { reply, call };
  }
}

async function* fromList(
  events: readonly MessageStreamEvent[],
  delayMs: number,
  signal: AbortSignal,
): AsyncGenerator<MessageStreamEvent> {
  for (const event of events) {
    if (delayMs > 0) await sleep(delayMs, signal);
    if (signal.aborted) throw signal.reason;
    yield event;
  }
}

/** Fills in a scripted reply as the Messages API would. */
export function fillReply(
  reply: ScriptedReply,
  request: ModelRequest,
  modelId: string,
  call: number,
): ModelResponse {
  const content: ContentBlock[] =
    typeof reply.content === "string"
      ? [{ type: "text", text: reply.content }]
      : (reply.content ?? [{ type: "text", text: "" }]);
  const hasToolUse = content.some((block) => block.type === "tool_use");
  const contentBytes = Buffer.byteLength(JSON.stringify(content));
  // Counts the script gives are reported as given, even ones no API would send (a test of how
  // the loop treats bad usage needs them verbatim); only counts left out are filled in.
  const given = (reply.usage ?? {}) as Record<string, unknown>;
  const has = (key: keyof Usage) => Object.hasOwn(given, key) && given[key] !== undefined;
  let output = has("output_tokens")
    ? (given.output_tokens as number)
    : Math.max(1, Math.ceil(contentBytes / 4));
  let stop =
    reply.stop_reason !== undefined ? reply.stop_reason : hasToolUse ? "tool_use" : "end_turn";
  if (Number.isFinite(output) && output > request.max_tokens) {
    // A real model cannot write past max_tokens: the reply is cut there.
    output = request.max_tokens;
    stop = "max_tokens";
  }
  const input = has("input_tokens")
    ? (given.input_tokens as number)
    : Math.ceil(requestBytes(request) / 4);
  return {
    id: reply.id ?? `msg_scripted_${call}`,
    type: "message",
    role: "assistant",
    model: reply.model ?? modelId,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: {
      input_tokens: input,
      output_tokens: output,
      cache_creation_input_tokens: has("cache_creation_input_tokens")
        ? (given.cache_creation_input_tokens as number | null)
        : 0,
      cache_read_input_tokens: has("cache_read_input_tokens")
        ? (given.cache_read_input_tokens as number | null)
        : 0,
    },
  };
}
