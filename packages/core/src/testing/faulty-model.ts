import { classifyClaudeError } from "../anthropic/classify-claude-error.js";
import { loadSdk } from "../anthropic/load-sdk.js";
import type {
  ContentBlock,
  ErrorClassification,
  MessageStreamEvent,
  Model,
  ModelRequest,
  ModelResponse,
  ToolUseBlock,
} from "../contracts/model.js";
import { InvalidArgumentError } from "../errors.js";
import { sleep } from "../retry.js";
import { createMessageAssembler, messageEvents } from "../stream/assemble-message.js";
import { attachStream } from "../stream/attach-stream.js";

/** An error a faulty call throws, as the real API would send it. */
export type ModelFault =
  | "400"
  | "401"
  | "403"
  | "404"
  | "413"
  | "429"
  | "500"
  | "503"
  | "529"
  | "connection"
  | "timeout";

const faults: readonly ModelFault[] = [
  "400",
  "401",
  "403",
  "404",
  "413",
  "429",
  "500",
  "503",
  "529",
  "connection",
  "timeout",
];

/** Which calls (1-based, counting every attempt) go wrong, and how. */
export interface FaultyModelOptions {
  /** Throw a real `@anthropic-ai/sdk` error on these calls instead of calling the model. */
  errors?: Readonly<Record<number, ModelFault>>;
  /** Replace the first tool call's input with something that is not an object (or add such a call). */
  malformedToolInput?: readonly number[];
  /** Cut the reply at `max_tokens`, in the middle of a tool call. */
  maxTokens?: readonly number[];
  /** Answer `pause_turn` (the server paused a long turn; the loop sends the turn back to continue). */
  pauseTurn?: readonly number[];
  /** Answer `refusal`. */
  refusal?: readonly number[];
  /** Sent as `retry-after-ms` with 429, 500, 503 and 529 errors. */
  retryAfterMs?: number;
  /** Sent as `retry-after` (seconds) with 429, 500, 503 and 529 errors. */
  retryAfter?: number;
  /**
   * Mid-stream `error` events: on these calls the stream sends `afterEvents` events (HTTP 200
   * already given) and then throws the SDK's error for an SSE `error` event of `type`
   * (default `overloaded_error`). `create()` throws it without a reply.
   */
  streamErrors?: Readonly<Record<number, { afterEvents: number; type?: string }>>;
  /** Stalls: on these calls the stream sends this many events, then nothing until the call is aborted. */
  stalls?: Readonly<Record<number, number>>;
  /** Cut streams: on these calls the stream sends this many events and ends without `message_stop`. */
  cuts?: Readonly<Record<number, number>>;
  /** Garble the first tool call's `input_json_delta` fragments so they are not JSON when the block stops. */
  invalidToolJson?: readonly number[];
}

/** One fault that was injected. */
export interface InjectedFault {
  call: number;
  fault:
    | ModelFault
    | "malformed_tool_input"
    | "max_tokens"
    | "pause_turn"
    | "refusal"
    | "stream_error"
    | "stall"
    | "cut"
    | "invalid_tool_json";
}

/** A model wrapped with faults; it records what it injected. */
export interface FaultyModel extends Model {
  /** Calls made so far (every attempt counts). */
  readonly calls: number;
  /** Calls that reached the wrapped model. */
  readonly innerCalls: number;
  /** The faults injected, in order. */
  readonly injected: readonly InjectedFault[];
}

const statusTypes: Record<string, [number, string, string]> = {
  "400": [400, "invalid_request_error", "messages.1.content: tool_use ids must be unique"],
  "401": [401, "authentication_error", "invalid x-api-key"],
  "403": [
    403,
    "permission_error",
    "Your API key does not have permission to use the specified resource.",
  ],
  "404": [404, "not_found_error", "model: claude-unknown"],
  "413": [413, "request_too_large", "Request exceeds the maximum allowed number of bytes."],
  "429": [
    429,
    "rate_limit_error",
    "Number of request tokens has exceeded your per-minute rate limit.",
  ],
  "500": [500, "api_error", "Internal server error"],
  "503": [503, "api_error", "Service unavailable"],
  "529": [529, "overloaded_error", "Overloaded"],
};

let faultCounter = 0;

/**
 * Wraps a model so chosen calls fail the way the real API fails: they throw real
 * `@anthropic-ai/sdk` error instances (with real headers: `request-id`, `retry-after`,
 * `retry-after-ms`), or rewrite the reply (a tool call whose input is not an object, a reply cut
 * at `max_tokens`, `pause_turn`, `refusal`). Call numbers are 1-based and count every attempt,
 * retries included. Needs `@anthropic-ai/sdk` (a dev dependency is enough) for error faults.
 * It streams too: `stream()` passes the wrapped model's events through and can inject what
 * only a stream suffers (a mid-stream `error` event after HTTP 200, a stall, a cut, tool
 * input JSON that does not parse).
 *
 * @example
 * const model = faultyModel(scriptedModel([...]), { errors: { 1: "429", 2: "connection" }, retryAfterMs: 50 });
 */
export function faultyModel(model: Model, options: FaultyModelOptions = {}): FaultyModel {
  if (!model || typeof model.create !== "function")
    throw new InvalidArgumentError(
      "[core] faultyModel(model, options): model must implement the Model contract",
    );
  checkFaultyModelOptions(options);
  const errors = options.errors ?? {};
  let calls = 0;
  let innerCalls = 0;
  const injected: InjectedFault[] = [];
  const begin = () => {
    calls += 1;
    return calls;
  };
  const throwIfFaulted = async (call: number) => {
    const fault = errors[call];
    if (fault) {
      injected.push({ call, fault });
      throw await sdkError(fault, options);
    }
  };
  const streamFaultOf = (
    call: number,
  ): { fault: "stream_error" | "stall" | "cut"; after: number; type: string } | undefined => {
    const error = options.streamErrors?.[call];
    if (error)
      return {
        fault: "stream_error",
        after: error.afterEvents,
        type: error.type ?? "overloaded_error",
      };
    const stall = options.stalls?.[call];
    if (stall !== undefined) return { fault: "stall", after: stall, type: "" };
    const cut = options.cuts?.[call];
    if (cut !== undefined) return { fault: "cut", after: cut, type: "" };
    return undefined;
  };
  const hasRewrite = (call: number) =>
    Boolean(
      options.malformedToolInput?.includes(call) ||
        options.maxTokens?.includes(call) ||
        options.pauseTurn?.includes(call) ||
        options.refusal?.includes(call),
    );
  const rewrite = (response: ModelResponse, request: ModelRequest, call: number): ModelResponse => {
    if (options.malformedToolInput?.includes(call)) {
      injected.push({ call, fault: "malformed_tool_input" });
      return malformed(response, request);
    }
    if (options.maxTokens?.includes(call)) {
      injected.push({ call, fault: "max_tokens" });
      return truncated(response, request);
    }
    if (options.pauseTurn?.includes(call)) {
      injected.push({ call, fault: "pause_turn" });
      return {
        ...response,
        content: response.content.filter((block) => block.type !== "tool_use"),
        stop_reason: "pause_turn",
      };
    }
    if (options.refusal?.includes(call)) {
      injected.push({ call, fault: "refusal" });
      return { ...response, content: [], stop_reason: "refusal" };
    }
    return response;
  };
  const faulty: FaultyModel = {
    name: `faulty(${model.name})`,
    model: model.model,
    ...(model.defaultMaxTokens !== undefined ? { defaultMaxTokens: model.defaultMaxTokens } : {}),
    get calls() {
      return calls;
    },
    get innerCalls() {
      return innerCalls;
    },
    get injected() {
      return injected;
    },
    async create(request, callOptions) {
      const call = begin();
      await throwIfFaulted(call);
      const streamFault = streamFaultOf(call);
      if (streamFault) {
        injected.push({ call, fault: streamFault.fault });
        // Without a stream to cut, the fault is what the host would see of it.
        if (streamFault.fault === "stream_error") throw await midStreamError(streamFault.type);
        if (streamFault.fault === "stall") await sleep(2 ** 31 - 1, callOptions.signal);
        throw await sdkError("connection", options);
      }
      innerCalls += 1;
      return rewrite(await model.create(request, callOptions), request, call);
    },
    async *stream(request: ModelRequest, callOptions: { signal: AbortSignal }) {
      const call = begin();
      await throwIfFaulted(call);
      innerCalls += 1;
      const streamFault = streamFaultOf(call);
      const rewriting = hasRewrite(call);
      let source: AsyncIterable<MessageStreamEvent>;
      if (rewriting || !model.stream) {
        // A rewritten reply is streamed from the whole rewritten message.
        let response: ModelResponse;
        if (model.stream) {
          const assembler = createMessageAssembler();
          for await (const event of model.stream(request, callOptions)) assembler.push(event);
          response = assembler.finish();
        } else response = await model.create(request, callOptions);
        source = listOf(messageEvents(rewrite(response, request, call)));
      } else source = model.stream(request, callOptions);
      const garble = options.invalidToolJson?.includes(call);
      if (garble) injected.push({ call, fault: "invalid_tool_json" });
      if (streamFault) injected.push({ call, fault: streamFault.fault });
      let sent = 0;
      let garbled = false;
      for await (const event of source) {
        if (streamFault && sent >= streamFault.after) {
          if (streamFault.fault === "stream_error") throw await midStreamError(streamFault.type);
          if (streamFault.fault === "cut") return;
          // A stall: nothing more arrives until the caller gives up (its watchdog or signal).
          await sleep(2 ** 31 - 1, callOptions.signal);
          return;
        }
        sent += 1;
        if (
          garble &&
          !garbled &&
          event.type === "content_block_delta" &&
          event.delta.type === "input_json_delta"
        ) {
          garbled = true;
          yield {
            ...event,
            delta: { type: "input_json_delta", partial_json: `${event.delta.partial_json}}{"` },
          };
          continue;
        }
        yield event;
      }
    },
    classifyError(error: unknown): ErrorClassification {
      const classification = classifyClaudeError(error);
      if (classification.kind === "unknown" && model.classifyError)
        return model.classifyError(error);
      return classification;
    },
  };
  // Like every loopguard model, stream() is not enumerable: `{ ...faulty, create }` drops it.
  return attachStream(faulty, faulty.stream!);
}

async function* listOf(events: readonly MessageStreamEvent[]): AsyncGenerator<MessageStreamEvent> {
  yield* events;
}

/** The error the SDK throws for an SSE `error` event after HTTP 200: no status, the event's type. */
async function midStreamError(type: string): Promise<Error> {
  const sdk = await loadSdk("faultyModel");
  const body = {
    type: "error",
    error: { type, message: type === "overloaded_error" ? "Overloaded" : "Internal server error" },
  };
  const headers = new Headers({
    "request-id": `req_faulty_${(++faultCounter).toString().padStart(6, "0")}`,
  });
  return new sdk.APIError(undefined, body, undefined, headers, type as never);
}

async function sdkError(fault: ModelFault, options: FaultyModelOptions): Promise<Error> {
  const sdk = await loadSdk("faultyModel");
  if (fault === "connection")
    return new sdk.APIConnectionError({
      message: "Connection error.",
      cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
    });
  if (fault === "timeout")
    return new sdk.APIConnectionTimeoutError({ message: "Request timed out." });
  const [status, type, message] = statusTypes[fault]!;
  const headers = new Headers({
    "content-type": "application/json",
    "request-id": `req_faulty_${(++faultCounter).toString().padStart(6, "0")}`,
  });
  if (status === 429 || status >= 500) {
    if (options.retryAfterMs !== undefined)
      headers.set("retry-after-ms", String(options.retryAfterMs));
    if (options.retryAfter !== undefined) headers.set("retry-after", String(options.retryAfter));
  }
  const body = { type: "error", error: { type, message } };
  return sdk.APIError.generate(status, body, undefined, headers);
}

function malformed(response: ModelResponse, request: ModelRequest): ModelResponse {
  const content = [...response.content];
  const index = content.findIndex((block) => block.type === "tool_use");
  const bad = '{"order_id": "A10';
  if (index >= 0) content[index] = { ...(content[index] as ToolUseBlock), input: bad };
  else
    content.push({
      type: "tool_use",
      id: `toolu_malformed_${++faultCounter}`,
      name: request.tools?.[0]?.name ?? "unknown_tool",
      input: bad,
    });
  return { ...response, content, stop_reason: "tool_use" };
}

function truncated(response: ModelResponse, request: ModelRequest): ModelResponse {
  const content: ContentBlock[] = [];
  for (const block of response.content) {
    if (block.type === "tool_use") {
      // The model was cut while writing the call's arguments: what arrived is incomplete.
      content.push({ ...block, input: {} });
      break;
    }
    content.push(block);
  }
  if (!content.some((block) => block.type === "tool_use")) {
    content.push({
      type: "tool_use",
      id: `toolu_cut_${++faultCounter}`,
      name: request.tools?.[0]?.name ?? "unknown_tool",
      input: {},
    });
  }
  return {
    ...response,
    content,
    stop_reason: "max_tokens",
    usage: { ...response.usage, output_tokens: request.max_tokens },
  };
}

/** Refuses options that name no call (not 1-based) or a fault this wrapper cannot inject. */
function checkFaultyModelOptions(options: FaultyModelOptions): void {
  const errors = options.errors ?? {};
  for (const [call, fault] of Object.entries(errors)) {
    if (!/^[1-9]\d*$/.test(call))
      throw new InvalidArgumentError(
        `[core] faultyModel: errors keys are 1-based call numbers, got ${JSON.stringify(call)}`,
      );
    if (!faults.includes(fault))
      throw new InvalidArgumentError(
        `[core] faultyModel: errors[${call}] must be one of ${faults.join(", ")}, got ${JSON.stringify(fault)}`,
      );
  }
  for (const [name, table] of Object.entries({
    streamErrors: options.streamErrors,
    stalls: options.stalls,
    cuts: options.cuts,
  })) {
    for (const [call, value] of Object.entries(table ?? {})) {
      const after =
        name === "streamErrors" ? (value as { afterEvents?: unknown })?.afterEvents : value;
      if (!/^[1-9]\d*$/.test(call) || !Number.isInteger(after) || (after as number) < 0) {
        throw new InvalidArgumentError(
          `[core] faultyModel: ${name} maps 1-based call numbers to ${name === "streamErrors" ? "{ afterEvents: n }" : "an event count"} (n >= 0), got ${JSON.stringify(call)}: ${JSON.stringify(value)}`,
        );
      }
    }
  }
  const lists = {
    invalidToolJson: options.invalidToolJson,
    malformedToolInput: options.malformedToolInput,
    maxTokens: options.maxTokens,
    pauseTurn: options.pauseTurn,
    refusal: options.refusal,
  };
  for (const [name, list] of Object.entries(lists)) {
    if (
      list !== undefined &&
      (!Array.isArray(list) || !list.every((call) => Number.isInteger(call) && call >= 1))
    ) {
      throw new InvalidArgumentError(
        `[core] faultyModel: ${name} must be an array of 1-based call numbers`,
      );
    }
  }
  for (const key of ["retryAfterMs", "retryAfter"] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isFinite(value) || value < 0))
      throw new InvalidArgumentError(`[core] faultyModel: ${key} must be a non-negative number`);
  }
}
