import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { AppliedContextEdit, ModelRequest, ModelResponse, Usage } from "../contracts/model.js";
import { InvalidArgumentError } from "../errors.js";
import { messageEvents } from "../stream/assemble-message.js";
import { applyLoopbackEdits } from "./loopback-context-edits.js";
import { loopbackTokenCount } from "./loopback-token-count.js";
import {
  type PromptCacheSimulator,
  type PromptCacheSimulatorOptions,
  promptCacheSimulator,
} from "./prompt-cache-simulator.js";
import { fillReply, type ScriptedReply } from "./scripted-model.js";

/** One request the server received. */
export interface ReceivedRequest {
  /** 1-based. */
  call: number;
  method: string;
  path: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The parsed JSON body (`undefined` when it was not JSON). */
  body: any;
  /** The body exactly as received. */
  rawBody: string;
  /** `performance.now()` when the request arrived, to measure backoff. */
  receivedAt: number;
  /** Whether the request asked for a stream (`"stream": true`). */
  stream: boolean;
  /** `performance.now()` when the first `content_block_delta` was written to the socket (streams only). */
  firstDeltaAt?: number;
  /** The usage the server reported for this request, once it answered. */
  usage?: Usage;
  /**
   * For a request with `context_management`: the prompt the model read after the server-side
   * edits (what the limit, the cache and the usage count), and the edits applied.
   */
  prompt?: unknown;
  appliedEdits?: AppliedContextEdit[];
}

/** How a streamed answer goes wrong (or how fast it goes), for one reply. */
export interface StreamBehaviour {
  /** Characters of text, thinking or tool JSON per delta. Default 16. */
  chunkChars?: number;
  /** Wait between events, in ms. Default 0 (events are still written one by one). */
  eventDelayMs?: number;
  /** Send an SSE `error` event after this many events (HTTP 200 already sent), then end the response. */
  errorAfterEvents?: number;
  /** The type of that error event. Default `overloaded_error`. */
  errorType?: string;
  /** End the response after this many events, without `message_stop`. */
  cutAfterEvents?: number;
  /** Send nothing more after this many events (the socket stays open until the client gives up or `close()`). */
  stallAfterEvents?: number;
  /** Send this text as the body instead of the events (to test malformed SSE). */
  raw?: string;
}

/** What the server does with one request. */
export type ServerReply =
  /** Answers 200 with a message: a full response (sent as is) or a partial one, filled in like `scriptedModel`. */
  | {
      type: "message";
      message: ScriptedReply | ModelResponse;
      delayMs?: number;
      headers?: Record<string, string>;
      /** How a streamed answer behaves; ignored for requests without `"stream": true`. */
      stream?: StreamBehaviour;
    }
  /** Answers with a real API error body (`{"type":"error","error":{...}}`) and status. */
  | {
      type: "error";
      status: number;
      /** Default: the API's type for the status (`rate_limit_error`, `overloaded_error`, ...). */
      errorType?: string;
      message?: string;
      /** Sent as the `retry-after` header, in seconds. */
      retryAfter?: number | string;
      /** Sent as the `retry-after-ms` header. */
      retryAfterMs?: number;
      headers?: Record<string, string>;
      delayMs?: number;
    }
  /** Destroys the socket without answering (the client sees a connection error). */
  | { type: "drop"; delayMs?: number }
  /** Never answers (the client's timeout fires); the socket is closed by `close()`. */
  | { type: "hang" };

/** Decides the reply to one request. */
export type ServerHandler = (
  request: ReceivedRequest,
) =>
  | ServerReply
  | ModelResponse
  | ScriptedReply
  | Promise<ServerReply | ModelResponse | ScriptedReply>;

/** Options of {@link messagesApiServer}: a handler, or a list of replies in order. */
export interface MessagesApiServerOptions {
  handler?: ServerHandler;
  /** Replies in order, one per request; a request past the end gets a 500 saying so. */
  replies?: ReadonlyArray<ServerReply | ModelResponse | ScriptedReply>;
  /** The API key the server accepts (in `x-api-key` or `Authorization: Bearer`). Default: any non-empty key. */
  apiKey?: string;
  /**
   * Simulate prompt caching (see `promptCacheSimulator`): usage of replies that do not set
   * their own `input_tokens` is billed as cache reads, writes and plain input. Default `true`;
   * `false` reports every prompt token as plain input.
   */
  cache?: boolean | PromptCacheSimulatorOptions;
  /**
   * The most prompt tokens a request may have, counted by {@link loopbackTokenCount}. A
   * `POST /v1/messages` above it gets the API's answer, 400 `invalid_request_error` "prompt is
   * too long: N tokens > M maximum" (the script is not asked). Default: no limit.
   */
  contextLimit?: number;
}

/** A running loopback Messages API server. */
export interface MessagesApiServer {
  /** The base URL to give the SDK (`baseURL`), e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: ReceivedRequest[];
  /** Requests to `POST /v1/messages` that passed header checks and got a reply from the script. */
  readonly calls: number;
  /** The prompt cache, when simulated. */
  readonly cache: PromptCacheSimulator | undefined;
  /** Requests refused as "prompt is too long" (`contextLimit`). */
  readonly refusedTooLong: number;
  /** Stops the server and destroys open connections; safe to call twice. */
  close(): Promise<void>;
}

const errorTypes: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

const defaultMessages: Record<string, string> = {
  invalid_request_error: "Invalid request.",
  authentication_error: "invalid x-api-key",
  permission_error: "Your API key does not have permission to use the specified resource.",
  not_found_error: "The requested resource could not be found.",
  request_too_large: "Request exceeds the maximum allowed number of bytes.",
  rate_limit_error: "Number of request tokens has exceeded your per-minute rate limit.",
  api_error: "Internal server error.",
  overloaded_error: "Overloaded",
};

let requestCounter = 0;

const nextRequestId = () => `req_loopback_${(++requestCounter).toString().padStart(6, "0")}`;

/**
 * Starts a real HTTP server on 127.0.0.1 (a free port) that speaks `POST /v1/messages` like
 * the Anthropic API: it checks the API key (`x-api-key` or `Authorization: Bearer`) and `anthropic-version` headers, answers JSON
 * with a `request-id` header, sends real error bodies with real statuses (429 with
 * `retry-after`, 529 `overloaded_error`, ...), can drop the connection or delay, and records
 * every request. Point the real SDK at it with `baseURL` to test the Claude backend offline.
 *
 * Streaming requests (`"stream": true`) get server-sent events in the API's order
 * (`message_start`, `ping`, per block `content_block_start`, deltas, `content_block_stop`,
 * `message_delta`, `message_stop`), and a reply's `stream` option can send a mid-stream
 * `error` event after HTTP 200, stall, cut the stream or send malformed SSE. Prompt caching is
 * simulated as documented: a prefix is cached at a `cache_control` breakpoint once it reaches
 * the model's minimum length, read back when a later request shares it (checked at each
 * breakpoint and up to 20 blocks before it), kept 5 minutes or 1 hour from its last use, with
 * `cache_creation_input_tokens` and `cache_read_input_tokens` in the usage.
 *
 * Tokens are counted deterministically ({@link loopbackTokenCount}: one per 4 UTF-8 bytes of
 * each block's JSON). With `contextLimit`, a prompt above it is refused before the script is
 * asked, as the API refuses it: 400 `invalid_request_error` "prompt is too long: N tokens > M
 * maximum". `POST /v1/messages/count_tokens` answers `{ "input_tokens": N }` with the same count.
 *
 * Server-side context editing (`context_management.edits` with the beta header
 * `context-management-2025-06-27`) is applied as the API applies `clear_tool_uses_20250919`
 * (see `applyLoopbackEdits`): the limit, the cache and the usage count the edited prompt, and
 * the reply says what was cleared in `context_management.applied_edits` (on `message_delta`
 * when streamed). An unknown edit type, or `context_management` without the beta header, gets
 * the API's 400.
 *
 * @example
 * const server = await messagesApiServer({ replies: [{ type: "error", status: 429, retryAfterMs: 200 }, { content: "Hi" }] });
 * const model = claudeModel({ baseURL: server.url, apiKey: "sk-ant-test" });
 * // ... run, then inspect server.requests[0].body
 * await server.close();
 */
export async function messagesApiServer(
  options: MessagesApiServerOptions,
): Promise<MessagesApiServer> {
  checkServerOptions(options);
  const loopback = new Loopback(options);
  const server: Server = createServer((incoming, response) => {
    loopback.handle(incoming, response).catch((error: unknown) => {
      if (!response.headersSent && !response.destroyed) {
        sendError(
          response,
          500,
          "api_error",
          `messagesApiServer handler failed: ${(error as Error)?.message ?? String(error)}`,
        );
      }
    });
  });
  server.on("connection", (socket) => {
    loopback.sockets.add(socket);
    socket.on("close", () => loopback.sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: loopback.requests,
    cache: loopback.cache,
    get calls() {
      return loopback.calls;
    },
    get refusedTooLong() {
      return loopback.refusedTooLong;
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        for (const timer of loopback.timers) clearTimeout(timer);
        server.close(() => resolve());
        for (const socket of loopback.sockets) socket.destroy();
      });
      return closed;
    },
  };
}

function checkServerOptions(options: MessagesApiServerOptions): void {
  if (!options || (options.handler === undefined) === (options.replies === undefined)) {
    throw new InvalidArgumentError(
      "[core] messagesApiServer(options): pass exactly one of handler (request) => reply or replies: [...]",
    );
  }
  if (options.handler !== undefined && typeof options.handler !== "function") {
    throw new InvalidArgumentError(
      "[core] messagesApiServer: handler must be a function (request) => reply",
    );
  }
  if (options.replies !== undefined && !Array.isArray(options.replies)) {
    throw new InvalidArgumentError("[core] messagesApiServer: replies must be an array");
  }
  const limit = options.contextLimit;
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) {
    throw new InvalidArgumentError(
      `[core] messagesApiServer: contextLimit must be a positive whole number of prompt tokens (e.g. 199999), got ${JSON.stringify(limit)}`,
    );
  }
}

function send(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (response.destroyed || response.writableEnded) return;
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "request-id": nextRequestId(),
    ...headers,
  });
  response.end(text);
}

function sendError(
  response: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  send(response, status, { type: "error", error: { type, message } }, headers);
}

/** The state of one loopback server and how it answers each request. */
class Loopback {
  readonly requests: ReceivedRequest[] = [];
  readonly cache: PromptCacheSimulator | undefined;
  readonly sockets = new Set<Socket>();
  readonly timers = new Set<ReturnType<typeof setTimeout>>();
  calls = 0;
  refusedTooLong = 0;
  readonly #options: MessagesApiServerOptions;

  constructor(options: MessagesApiServerOptions) {
    this.#options = options;
    this.cache =
      options.cache === false
        ? undefined
        : promptCacheSimulator(
            options.cache === true || options.cache === undefined ? {} : options.cache,
          );
  }

  async #decide(request: ReceivedRequest): Promise<ServerReply> {
    this.calls += 1;
    const options = this.#options;
    let reply: ServerReply | ModelResponse | ScriptedReply | undefined;
    if (options.handler) reply = await options.handler(request);
    else {
      reply = options.replies![this.calls - 1];
      if (reply === undefined) {
        return {
          type: "error",
          status: 500,
          message: `messagesApiServer: the script has ${options.replies!.length} replies but got request ${this.calls}`,
        };
      }
    }
    return normalise(reply);
  }

  #wait(ms: number | undefined): Promise<void> {
    if (!ms || ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  /** Reads and records one request. */
  async #receive(incoming: IncomingMessage): Promise<ReceivedRequest> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = rawBody === "" ? undefined : JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(incoming.headers))
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : (value ?? "");
    const received: ReceivedRequest = {
      call: this.requests.length + 1,
      method: incoming.method ?? "",
      path: (incoming.url ?? "/").split("?")[0]!,
      headers,
      body,
      rawBody,
      receivedAt: performance.now(),
      stream: (body as { stream?: unknown } | undefined)?.stream === true,
    };
    this.requests.push(received);
    return received;
  }

  /** The API's refusal of a request's route, headers or body, if it has one. */
  #refusal(received: ReceivedRequest): [number, string, string] | undefined {
    const { method, path, headers, body } = received;
    const counting = path === "/v1/messages/count_tokens";
    if (method !== "POST" || (path !== "/v1/messages" && !counting))
      return [404, "not_found_error", `Not found: ${method} ${path}`];
    const key = headers["x-api-key"];
    if (!key && !headers.authorization)
      return [401, "authentication_error", "x-api-key header is required"];
    // SDK 1.x sends the key as `Authorization: Bearer <key>`; older clients send `x-api-key`.
    const apiKey = this.#options.apiKey;
    if (apiKey !== undefined && key !== apiKey && headers.authorization !== `Bearer ${apiKey}`)
      return [401, "authentication_error", "invalid x-api-key"];
    if (!headers["anthropic-version"])
      return [400, "invalid_request_error", "anthropic-version: header is required"];
    const invalid = validateBody(body, counting);
    if (invalid) return [400, "invalid_request_error", invalid];
    if ((body as { context_management?: unknown }).context_management != null) {
      const edited = applyLoopbackEdits(body, headers["anthropic-beta"]);
      if (typeof edited === "string") return [400, "invalid_request_error", edited];
      received.prompt = edited.body;
      received.appliedEdits = edited.applied;
    }
    const limit = this.#options.contextLimit;
    if (limit !== undefined && !counting) {
      const tokens = loopbackTokenCount(received.prompt ?? body);
      if (tokens > limit) {
        this.refusedTooLong += 1;
        return [
          400,
          "invalid_request_error",
          `prompt is too long: ${tokens} tokens > ${limit} maximum`,
        ];
      }
    }
    return undefined;
  }

  async handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const received = await this.#receive(incoming);
    const refusal = this.#refusal(received);
    if (refusal) return sendError(response, ...refusal);
    if (received.path === "/v1/messages/count_tokens")
      return send(response, 200, {
        input_tokens: loopbackTokenCount(received.prompt ?? received.body),
        ...(received.prompt !== undefined
          ? { context_management: { original_input_tokens: loopbackTokenCount(received.body) } }
          : {}),
      });
    const reply = await this.#decide(received);
    switch (reply.type) {
      case "hang":
        return;
      case "drop":
        await this.#wait(reply.delayMs);
        incoming.socket.destroy();
        return;
      case "error":
        return this.#sendScriptedError(response, reply);
      case "message":
        return this.#sendMessage(response, received, reply);
    }
  }

  async #sendScriptedError(
    response: ServerResponse,
    reply: Extract<ServerReply, { type: "error" }>,
  ): Promise<void> {
    await this.#wait(reply.delayMs);
    const type =
      reply.errorType ??
      errorTypes[reply.status] ??
      (reply.status >= 500 ? "api_error" : "invalid_request_error");
    const extra: Record<string, string> = { ...reply.headers };
    if (reply.retryAfter !== undefined) extra["retry-after"] = String(reply.retryAfter);
    if (reply.retryAfterMs !== undefined) extra["retry-after-ms"] = String(reply.retryAfterMs);
    if (reply.status === 529 || reply.status >= 500) extra["x-should-retry"] ??= "true";
    sendError(
      response,
      reply.status,
      type,
      reply.message ?? defaultMessages[type] ?? "Error",
      extra,
    );
  }

  async #sendMessage(
    response: ServerResponse,
    received: ReceivedRequest,
    reply: Extract<ServerReply, { type: "message" }>,
  ): Promise<void> {
    await this.#wait(reply.delayMs ?? (reply.message as ScriptedReply).delayMs);
    const body = received.body as ModelRequest;
    let message: ModelResponse;
    if (isFullResponse(reply.message)) message = reply.message;
    else {
      const scripted = reply.message;
      message = fillReply(scripted, body, body.model, this.calls);
      if (scripted.usage?.input_tokens === undefined) {
        const prompt = received.prompt ?? body;
        const billed = this.cache?.account(prompt) ?? plainUsage(prompt);
        if ("error" in billed)
          return sendError(response, 400, "invalid_request_error", billed.error);
        message = {
          ...message,
          usage: { ...billed.usage, output_tokens: message.usage.output_tokens },
        };
      }
    }
    if (received.appliedEdits !== undefined)
      message = { ...message, context_management: { applied_edits: received.appliedEdits } };
    received.usage = message.usage;
    if (!received.stream) return send(response, 200, message, reply.headers);
    return this.#stream(response, received, message, reply.stream ?? {}, reply.headers);
  }

  async #stream(
    response: ServerResponse,
    received: ReceivedRequest,
    message: ModelResponse,
    behaviour: StreamBehaviour,
    headers: Record<string, string> = {},
  ): Promise<void> {
    if (response.destroyed || response.writableEnded) return;
    response.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "request-id": nextRequestId(),
      ...headers,
    });
    response.flushHeaders();
    if (behaviour.raw !== undefined) {
      response.end(behaviour.raw);
      return;
    }
    const events = messageEvents(message, {
      ...(behaviour.chunkChars !== undefined ? { chunkChars: behaviour.chunkChars } : {}),
    });
    let sent = 0;
    for (const event of events) {
      if (response.destroyed) return;
      if (behaviour.errorAfterEvents !== undefined && sent >= behaviour.errorAfterEvents) {
        const type = behaviour.errorType ?? "overloaded_error";
        const error = { type: "error", error: { type, message: defaultMessages[type] ?? "Error" } };
        response.end(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
        return;
      }
      if (behaviour.cutAfterEvents !== undefined && sent >= behaviour.cutAfterEvents) {
        response.end();
        return;
      }
      // A stall keeps the socket open and silent; close() destroys it.
      if (behaviour.stallAfterEvents !== undefined && sent >= behaviour.stallAfterEvents) return;
      if (behaviour.eventDelayMs) await this.#wait(behaviour.eventDelayMs);
      else if (sent > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      if (response.destroyed) return;
      if (event.type === "content_block_delta" && received.firstDeltaAt === undefined)
        received.firstDeltaAt = performance.now();
      response.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      sent += 1;
    }
    response.end();
  }
}

/** Usage without a cache: every prompt token is plain input (counted as the simulator counts). */
function plainUsage(body: unknown): { usage: Usage } {
  const billed = promptCacheSimulator({ minTokens: Number.MAX_SAFE_INTEGER }).account(body);
  if ("error" in billed) return { usage: { input_tokens: 0, output_tokens: 0 } };
  return { usage: { ...billed.usage, output_tokens: 0, cache_creation: null } };
}

function isFullResponse(value: ScriptedReply | ModelResponse): value is ModelResponse {
  const record = value as Partial<ModelResponse>;
  return (
    record.type === "message" &&
    record.role === "assistant" &&
    typeof record.id === "string" &&
    Array.isArray(record.content) &&
    record.usage !== undefined
  );
}

function normalise(reply: ServerReply | ModelResponse | ScriptedReply): ServerReply {
  const type = (reply as { type?: unknown }).type;
  if (type === "error" || type === "drop" || type === "hang") return reply as ServerReply;
  if (type === "message" && "message" in reply) return reply as ServerReply;
  return { type: "message", message: reply as ScriptedReply | ModelResponse };
}

/** The checks the real API makes that a client bug could trip; returns the error message. */
function validateBody(body: unknown, counting = false): string | undefined {
  if (!body || typeof body !== "object" || Array.isArray(body))
    return "The request body is not valid JSON.";
  const request = body as Record<string, unknown>;
  if (typeof request.model !== "string" || request.model === "") return "model: Field required";
  if (!counting && (!Number.isInteger(request.max_tokens) || (request.max_tokens as number) < 1))
    return "max_tokens: Field required and must be a positive integer";
  if (!Array.isArray(request.messages) || request.messages.length === 0)
    return "messages: at least one message is required";
  const first = request.messages[0] as { role?: unknown } | undefined;
  if (first?.role !== "user") return 'messages: the first message must use the "user" role';
  const choice = request.tool_choice as { type?: unknown } | undefined;
  if (
    choice &&
    choice.type !== "auto" &&
    choice.type !== "none" &&
    /^claude-opus-5-5/.test(request.model)
  ) {
    return "tool_choice: forcing tool use is not compatible with thinking on this model; use tool_choice auto";
  }
  if (request.tools !== undefined && !Array.isArray(request.tools))
    return "tools: Input should be a valid list";
  if (
    request.system !== undefined &&
    typeof request.system !== "string" &&
    !Array.isArray(request.system)
  )
    return "system: Input should be a string or a list of text blocks";
  return undefined;
}
