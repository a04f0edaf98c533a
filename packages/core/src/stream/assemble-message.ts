import type {
  ContentBlock,
  ErrorClassification,
  MessageStreamEvent,
  ModelResponse,
  Usage,
} from "../contracts/model.js";
import { LoopguardError } from "../errors.js";

/**
 * A streamed response broke the Messages API stream protocol: an event that is not an object,
 * a delta for a block that was never started, a tool input that is not JSON when its block
 * stops, or a stream that ended without `message_stop`. (An event, delta or block of a type this
 * version of loopguard does not know is not an error, see {@link StreamSkip}, except a delta of
 * an unknown type for a tool call: its input might be incomplete, so it fails closed.)
 *
 * `retryable` is `true` for what a second attempt can fix (a cut stream, garbled JSON) and
 * `false` for what it cannot (a block with no type, an unreadable tool call).
 */
export class StreamProtocolError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.StreamProtocolError";
  /** A stable name: `stream_cut`, `malformed_stream`, `malformed_tool_input`, `malformed_response`, `stream_idle`, `unknown_stream_event`. */
  readonly kind: string;
  readonly retryable: boolean;
  /** Code `stream_protocol`; a subclass (`StreamIdleError`) passes its own `code`. */
  constructor(
    kind: string,
    retryable: boolean,
    message: string,
    options?: { cause?: unknown; code?: string },
  ) {
    super(
      options?.code ?? "stream_protocol",
      message,
      options?.cause !== undefined ? { cause: options.cause } : undefined,
    );
    this.kind = kind;
    this.retryable = retryable;
  }

  /** The classification the retry loop uses for this error. */
  classification(): ErrorClassification {
    return { retryable: this.retryable, kind: this.kind };
  }
}

/**
 * A part of a streamed response whose type this version of loopguard does not know (the API
 * adds types). It does not fail the run: an unknown event or delta is skipped; a content block
 * of an unknown type is kept in the message as it came (so the next request sends the API its
 * own block back) but not acted on, shown or parsed. Each is recorded on the step's
 * `model-response` event (`skipped`). The one exception fails closed: a delta of an unknown
 * type for a `tool_use` block (`StreamProtocolError`, `unknown_stream_event`).
 */
export interface StreamSkip {
  /** `event`: an event type; `delta`: a delta type; `block`: a content block type. */
  kind: "event" | "delta" | "block";
  /** The unknown type, as the API sent it. */
  type: string;
  /** The content block's index, for a delta or a block. */
  index?: number;
}

/** Content block types the loop acts on; any other type is kept as it came and recorded. */
export const knownBlockTypes: ReadonlySet<string> = new Set([
  "text",
  "thinking",
  "redacted_thinking",
  "tool_use",
]);

const knownEventTypes: ReadonlySet<string> = new Set([
  "message_start",
  "content_block_start",
  "content_block_delta",
  "content_block_stop",
  "message_delta",
  "message_stop",
  "ping",
]);

/** The most skips one message records (each distinct kind, type and block once). */
const maxSkips = 64;

/** What one pushed event added that a host may show as it arrives. */
export type AssemblerUpdate =
  /** Text appended to the text block at `index`. */
  | { type: "text"; index: number; text: string }
  /** Thinking appended to the thinking block at `index`. */
  | { type: "thinking"; index: number; thinking: string }
  /** A block is complete (a tool call's input is parsed): it will not change any more. */
  | { type: "block"; index: number; block: ContentBlock };

/** Turns stream events into the final message, one event at a time. */
export interface MessageAssembler {
  /** Takes the next event; returns what it added, if anything a host can show. Throws {@link StreamProtocolError}. */
  push(event: MessageStreamEvent): AssemblerUpdate | undefined;
  /** `true` once any content block has started (a retry from here on must reset the host's view). */
  readonly hasContent: boolean;
  /** `true` once `message_stop` arrived. */
  readonly done: boolean;
  /** The usage reported so far (from `message_start`, then `message_delta`), or `undefined` before `message_start`. */
  readonly usage: Usage | undefined;
  /** What was skipped or kept unread because its type is unknown, each kind, type and block once, in order. */
  readonly skipped: readonly StreamSkip[];
  /** The whole message; throws {@link StreamProtocolError} when the stream did not end with `message_stop`. */
  finish(): ModelResponse;
}

interface OpenBlock {
  block: Record<string, unknown> & { type: string };
  /** Text, thinking or JSON fragments, joined once at `content_block_stop`. */
  parts: string[];
  signature: string[];
  stopped: boolean;
}

const knownDeltaTargets: Record<string, string> = {
  text_delta: "text",
  citations_delta: "text",
  thinking_delta: "thinking",
  signature_delta: "thinking",
};

/**
 * Creates an assembler that rebuilds a Messages API response from its stream events exactly
 * as the API would have sent it whole: text and thinking are concatenated in order (thinking
 * and its signature byte for byte), a tool call's `input_json_delta` fragments are parsed only
 * when its `content_block_stop` arrives, `redacted_thinking` is kept as it came, and usage is
 * `message_start`'s overlaid with `message_delta`'s cumulative counts.
 *
 * @example
 * const assembler = createMessageAssembler();
 * for await (const event of model.stream(request, { signal })) {
 *   const update = assembler.push(event);
 *   if (update?.type === "text") process.stdout.write(update.text);
 * }
 * const message = assembler.finish();
 */
export function createMessageAssembler(): MessageAssembler {
  return new Assembler();
}

/** The state of one message being assembled; one method per kind of stream event. */
class Assembler implements MessageAssembler {
  #message: ModelResponse | undefined;
  readonly #blocks: OpenBlock[] = [];
  #done = false;
  #hasContent = false;
  readonly #skipped: StreamSkip[] = [];

  get skipped(): readonly StreamSkip[] {
    return this.#skipped;
  }

  #skip(kind: StreamSkip["kind"], type: string, index?: number): undefined {
    const seen = this.#skipped.some(
      (skip) => skip.kind === kind && skip.type === type && skip.index === index,
    );
    if (!seen && this.#skipped.length < maxSkips)
      this.#skipped.push({
        kind,
        type: type.slice(0, 200),
        ...(index !== undefined ? { index } : {}),
      });
    return undefined;
  }

  get hasContent(): boolean {
    return this.#hasContent;
  }

  get done(): boolean {
    return this.#done;
  }

  get usage(): Usage | undefined {
    return this.#message?.usage;
  }

  push(event: MessageStreamEvent): AssemblerUpdate | undefined {
    if (
      !event ||
      typeof event !== "object" ||
      typeof (event as { type?: unknown }).type !== "string"
    ) {
      return fail(
        "malformed_stream",
        true,
        `sent an event that is not an object with a type: ${preview(event)}`,
      );
    }
    if (event.type === "ping") return undefined;
    // The API adds event types: one this version does not know is skipped, never a failure.
    if (!knownEventTypes.has(event.type)) return this.#skip("event", event.type);
    if (this.#done) return fail("malformed_stream", true, `sent ${event.type} after message_stop`);
    if (event.type !== "message_start" && !this.#message) {
      return fail("malformed_stream", true, `sent ${event.type} before message_start`);
    }
    switch (event.type) {
      case "message_start":
        return this.#start(event);
      case "content_block_start":
        return this.#blockStart(event);
      case "content_block_delta":
        return this.#delta(event);
      case "content_block_stop":
        return this.#blockStop(event);
      case "message_delta":
        return this.#messageDelta(event);
      default:
        return this.#stop();
    }
  }

  finish() {
    if (!this.#message) fail("stream_cut", true, "ended before message_start");
    if (!this.#done)
      fail("stream_cut", true, "ended without message_stop (the connection was cut or went idle)");
    return {
      ...this.#message!,
      content: this.#blocks.map((open) => open.block as unknown as ContentBlock),
    };
  }

  /** `message_start`: the message's id, model and first usage. */
  #start(
    event: Extract<MessageStreamEvent, { type: "message_start" }>,
  ): AssemblerUpdate | undefined {
    if (this.#message) return fail("malformed_stream", true, "sent message_start twice");
    const start = event.message;
    if (!start || typeof start !== "object" || !start.usage) {
      return fail(
        "malformed_stream",
        true,
        `sent a message_start without a message and usage: ${preview(event)}`,
      );
    }
    this.#message = { ...start, content: [], usage: { ...start.usage } };
    return undefined;
  }

  /** `content_block_start`: a new block, in order. */
  #blockStart(
    event: Extract<MessageStreamEvent, { type: "content_block_start" }>,
  ): AssemblerUpdate | undefined {
    const block = event.content_block as unknown as OpenBlock["block"] | undefined;
    if (event.index !== this.#blocks.length) {
      return fail(
        "malformed_stream",
        true,
        `started block ${String(event.index)} out of order (expected block ${this.#blocks.length})`,
      );
    }
    if (!block || typeof block !== "object" || typeof block.type !== "string") {
      // The model's reply itself is malformed (as content[i] without a type would be in a
      // whole response): retrying the same request would not help.
      return fail(
        "malformed_response",
        false,
        `started block ${String(event.index)} with no type: ${preview(block)} (a malformed model response)`,
      );
    }
    this.#hasContent = true;
    const copy = { ...block };
    if (!knownBlockTypes.has(copy.type)) this.#skip("block", copy.type, event.index);
    const parts: string[] = [];
    if (copy.type === "text") parts.push(String(copy.text ?? ""));
    if (copy.type === "thinking") parts.push(String(copy.thinking ?? ""));
    const signature =
      copy.type === "thinking" && typeof copy.signature === "string" ? [copy.signature] : [];
    this.#blocks.push({ block: copy, parts, signature, stopped: false });
    return undefined;
  }

  /** `content_block_delta`: text, thinking, signature, citations or tool-input JSON for an open block. */
  #delta(
    event: Extract<MessageStreamEvent, { type: "content_block_delta" }>,
  ): AssemblerUpdate | undefined {
    const target = this.#open(event.index, "a delta");
    const delta = event.delta as unknown as { type?: unknown } & Record<string, unknown>;
    const deltaType = typeof delta?.type === "string" ? delta.type : "";
    if (deltaType === "")
      return fail(
        "malformed_stream",
        true,
        `sent a delta without a type for block ${event.index}: ${preview(delta)}`,
      );
    if (deltaType === "input_json_delta") {
      if (typeof delta.partial_json !== "string")
        return fail(
          "malformed_stream",
          true,
          `sent an input_json_delta without partial_json for block ${event.index}`,
        );
      if (target.block.type === "text" || target.block.type === "thinking")
        return fail(
          "malformed_stream",
          true,
          `sent an input_json_delta for the ${target.block.type} block ${event.index}`,
        );
      target.parts.push(delta.partial_json);
      return undefined;
    }
    const expected = knownDeltaTargets[deltaType];
    // A tool call is never run from input loopguard could not read whole: a delta of an
    // unknown type for a tool_use block could carry part of its input.
    if (!expected && target.block.type === "tool_use")
      return fail(
        "unknown_stream_event",
        false,
        `sent a delta of unknown type ${JSON.stringify(deltaType)} for the tool call in block ${event.index} (${String(target.block.name)}); a tool call is never run from input loopguard could not read: upgrade @loopguard/core or report it`,
      );
    // Any other delta of a type this version does not know, or any delta but tool JSON for a
    // block of an unknown type: skipped (the block keeps what content_block_start carried).
    if (!expected || !knownBlockTypes.has(target.block.type))
      return this.#skip("delta", deltaType, event.index);
    if (expected !== target.block.type) {
      return fail(
        "malformed_stream",
        true,
        `sent a ${deltaType} for the ${target.block.type} block ${event.index}`,
      );
    }
    switch (deltaType) {
      case "text_delta":
        if (typeof delta.text !== "string")
          return fail(
            "malformed_stream",
            true,
            `sent a text_delta without text (block ${event.index})`,
          );
        target.parts.push(delta.text);
        return delta.text === ""
          ? undefined
          : { type: "text", index: event.index, text: delta.text };
      case "thinking_delta":
        if (typeof delta.thinking !== "string")
          return fail(
            "malformed_stream",
            true,
            `sent a thinking_delta without thinking (block ${event.index})`,
          );
        target.parts.push(delta.thinking);
        return delta.thinking === ""
          ? undefined
          : { type: "thinking", index: event.index, thinking: delta.thinking };
      case "signature_delta":
        if (typeof delta.signature !== "string")
          return fail(
            "malformed_stream",
            true,
            `sent a signature_delta without signature (block ${event.index})`,
          );
        target.signature.push(delta.signature);
        return undefined;
      default: {
        const citations = Array.isArray(target.block.citations) ? target.block.citations : [];
        target.block.citations = [...citations, delta.citation];
        return undefined;
      }
    }
  }

  /** `content_block_stop`: the block is whole (a tool call's JSON is parsed here). */
  #blockStop(
    event: Extract<MessageStreamEvent, { type: "content_block_stop" }>,
  ): AssemblerUpdate | undefined {
    const target = this.#open(event.index, "content_block_stop");
    target.stopped = true;
    const block = target.block;
    if (block.type === "text") block.text = target.parts.join("");
    else if (block.type === "thinking") {
      block.thinking = target.parts.join("");
      block.signature = target.signature.join("");
    } else if (target.parts.length > 0 || block.type === "tool_use") {
      const json = target.parts.join("");
      if (json !== "" || target.parts.length > 0) {
        try {
          block.input = json === "" ? {} : JSON.parse(json);
        } catch {
          return fail(
            "malformed_tool_input",
            true,
            `sent tool input that is not JSON for block ${event.index} (${String(block.name ?? block.type)}): ${preview(json)}`,
          );
        }
      }
    }
    target.parts = [];
    return { type: "block", index: event.index, block: block as unknown as ContentBlock };
  }

  /** `message_delta`: the stop reason and cumulative usage. */
  #messageDelta(
    event: Extract<MessageStreamEvent, { type: "message_delta" }>,
  ): AssemblerUpdate | undefined {
    const delta = event.delta;
    const usage = event.usage;
    if (!delta || typeof delta !== "object" || !usage || typeof usage.output_tokens !== "number") {
      return fail(
        "malformed_stream",
        true,
        `sent a message_delta without delta and usage.output_tokens: ${preview(event)}`,
      );
    }
    const current = this.#message!;
    current.stop_reason = delta.stop_reason ?? null;
    if (delta.stop_sequence !== undefined) current.stop_sequence = delta.stop_sequence;
    const merged: Usage = { ...current.usage, output_tokens: usage.output_tokens };
    for (const key of [
      "input_tokens",
      "cache_creation_input_tokens",
      "cache_read_input_tokens",
    ] as const) {
      const value = usage[key];
      if (typeof value === "number") (merged as unknown as Record<string, number>)[key] = value;
    }
    current.usage = merged;
    // Server-side context edits are reported on message_delta (absent when none were asked for).
    if (event.context_management != null) current.context_management = event.context_management;
    return undefined;
  }

  /** `message_stop`: every block must have stopped. */
  #stop(): AssemblerUpdate | undefined {
    const unfinished = this.#blocks.findIndex((block) => !block.stopped);
    if (unfinished >= 0)
      return fail(
        "malformed_stream",
        true,
        `sent message_stop while block ${unfinished} was still open`,
      );
    this.#done = true;
    return undefined;
  }

  #open(index: unknown, what: string): OpenBlock {
    const block = Number.isInteger(index) ? this.#blocks[index as number] : undefined;
    if (!block)
      return fail(
        "malformed_stream",
        true,
        `sent ${what} for block ${String(index)}, which never started`,
      );
    if (block.stopped)
      return fail(
        "malformed_stream",
        true,
        `sent ${what} for block ${String(index)} after it stopped`,
      );
    return block;
  }
}

function fail(kind: string, retryable: boolean, detail: string): never {
  throw new StreamProtocolError(
    kind,
    retryable,
    `[core] the model's stream ${detail}${retryable ? "; the step is retried" : ""}`,
  );
}

/**
 * Reads a whole stream and returns the message it carried.
 *
 * @example
 * const message = await assembleMessage(model.stream(request, { signal }));
 */
export async function assembleMessage(
  events: AsyncIterable<MessageStreamEvent>,
): Promise<ModelResponse> {
  const assembler = createMessageAssembler();
  for await (const event of events) assembler.push(event);
  return assembler.finish();
}

/** Options of {@link messageEvents}. */
export interface MessageEventsOptions {
  /** Characters of text, thinking or tool JSON per delta. Default 16. */
  chunkChars?: number;
  /** Send a `ping` after `message_start`, as the API does. Default `true`. */
  ping?: boolean;
}

/**
 * Splits a whole response into the stream events the API would send for it (for scripted
 * models and the loopback server). `assembleMessage(messageEvents(response))` deep-equals
 * `response`.
 *
 * @example
 * for (const event of messageEvents(response, { chunkChars: 8 })) send(event);
 */
export function messageEvents(
  response: ModelResponse,
  options: MessageEventsOptions = {},
): MessageStreamEvent[] {
  const size = Math.max(1, Math.floor(options.chunkChars ?? 16));
  const chunks = (text: string): string[] => {
    const out: string[] = [];
    // Split on code points so no delta holds half a surrogate pair.
    const points = Array.from(text);
    for (let at = 0; at < points.length; at += size) out.push(points.slice(at, at + size).join(""));
    return out;
  };
  const { content, stop_reason, stop_sequence, usage, context_management, ...head } = response;
  const events: MessageStreamEvent[] = [
    {
      type: "message_start",
      message: {
        ...head,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: Math.min(usage.output_tokens, 1) },
      },
    },
  ];
  if (options.ping ?? true) events.push({ type: "ping" });
  content.forEach((block, index) => {
    switch (block.type) {
      case "text": {
        // Spread then override, so every key keeps its place and the assembled block's JSON
        // is byte for byte the original's.
        events.push({
          type: "content_block_start",
          index,
          content_block: { ...block, text: "" },
        });
        for (const part of chunks(block.text))
          events.push({
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: part },
          });
        break;
      }
      case "thinking": {
        events.push({
          type: "content_block_start",
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        });
        for (const part of chunks(block.thinking))
          events.push({
            type: "content_block_delta",
            index,
            delta: { type: "thinking_delta", thinking: part },
          });
        events.push({
          type: "content_block_delta",
          index,
          delta: { type: "signature_delta", signature: block.signature },
        });
        break;
      }
      case "tool_use": {
        const { input } = block;
        events.push({
          type: "content_block_start",
          index,
          content_block: { ...block, input: {} },
        });
        const json = JSON.stringify(input === undefined ? {} : input);
        for (const part of chunks(json))
          events.push({
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: part },
          });
        break;
      }
      default:
        events.push({ type: "content_block_start", index, content_block: block });
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({
    type: "message_delta",
    delta: { stop_reason, stop_sequence: stop_sequence ?? null },
    usage: {
      output_tokens: usage.output_tokens,
      ...(usage.input_tokens !== undefined ? { input_tokens: usage.input_tokens } : {}),
      ...(usage.cache_creation_input_tokens != null
        ? { cache_creation_input_tokens: usage.cache_creation_input_tokens }
        : {}),
      ...(usage.cache_read_input_tokens != null
        ? { cache_read_input_tokens: usage.cache_read_input_tokens }
        : {}),
    },
    ...(context_management != null ? { context_management } : {}),
  });
  events.push({ type: "message_stop" });
  return events;
}

function preview(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 120)}...` : text;
}
