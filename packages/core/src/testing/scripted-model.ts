import type {
  ContentBlock,
  Model,
  ModelRequest,
  ModelResponse,
  StopReason,
  Usage,
} from "../contracts/model.js";
import { InvalidArgumentError } from "../errors.js";
import { requestBytes } from "../pricing.js";
import { sleep } from "../retry.js";

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
 * the content size, never above `max_tokens`), `id` and `model`.
 *
 * @example
 * const model = scriptedModel([
 *   { content: [{ type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1001" } }] },
 *   { content: "Your refund is on its way." },
 * ]);
 */
export function scriptedModel(
  script: Script,
  options: { model?: string; copyRequests?: boolean } = {},
): ScriptedModel {
  if (!Array.isArray(script) && typeof script !== "function") {
    throw new InvalidArgumentError(
      "[core] scriptedModel(script): script must be an array of replies or a function (request, call) => reply",
    );
  }
  const requests: ModelRequest[] = [];
  let calls = 0;
  const modelId = options.model ?? "claude-sonnet-5-5";
  const copy = options.copyRequests ?? true;
  return {
    name: "scripted",
    model: modelId,
    get requests() {
      return requests;
    },
    get calls() {
      return calls;
    },
    async create(request, { signal }) {
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
      return fillReply(reply, request, modelId, call);
    },
  };
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
  let output = reply.usage?.output_tokens ?? Math.max(1, Math.ceil(contentBytes / 4));
  let stop =
    reply.stop_reason !== undefined ? reply.stop_reason : hasToolUse ? "tool_use" : "end_turn";
  if (output > request.max_tokens) {
    // A real model cannot write past max_tokens: the reply is cut there.
    output = request.max_tokens;
    stop = "max_tokens";
  }
  const input = reply.usage?.input_tokens ?? Math.ceil(requestBytes(request) / 4);
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
      cache_creation_input_tokens: reply.usage?.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: reply.usage?.cache_read_input_tokens ?? 0,
    },
  };
}
