import { classifyClaudeError } from "../anthropic/classify-claude-error.js";
import { loadSdk } from "../anthropic/load-sdk.js";
import type {
  ContentBlock,
  ErrorClassification,
  Model,
  ModelRequest,
  ModelResponse,
  ToolUseBlock,
} from "../contracts/model.js";
import { InvalidArgumentError } from "../errors.js";

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
}

/** One fault that was injected. */
export interface InjectedFault {
  call: number;
  fault: ModelFault | "malformed_tool_input" | "max_tokens" | "pause_turn" | "refusal";
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
 *
 * @example
 * const model = faultyModel(scriptedModel([...]), { errors: { 1: "429", 2: "connection" }, retryAfterMs: 50 });
 */
export function faultyModel(model: Model, options: FaultyModelOptions = {}): FaultyModel {
  if (!model || typeof model.create !== "function")
    throw new InvalidArgumentError(
      "[core] faultyModel(model, options): model must implement the Model contract",
    );
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
  const lists = {
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
  let calls = 0;
  let innerCalls = 0;
  const injected: InjectedFault[] = [];
  return {
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
      calls += 1;
      const call = calls;
      const fault = errors[call];
      if (fault) {
        injected.push({ call, fault });
        throw await sdkError(fault, options);
      }
      innerCalls += 1;
      const response = await model.create(request, callOptions);
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
    },
    classifyError(error: unknown): ErrorClassification {
      const classification = classifyClaudeError(error);
      if (classification.kind === "unknown" && model.classifyError)
        return model.classifyError(error);
      return classification;
    },
  };
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
