import type { Model, ModelRequest, ModelResponse, Usage } from "../contracts/model.js";
import { yieldIfBusy } from "../yield-if-busy.js";
import {
  type AssemblerUpdate,
  createMessageAssembler,
  knownBlockTypes,
  StreamProtocolError,
  type StreamSkip,
} from "./assemble-message.js";

/** The idle watchdog fired: the stream sent nothing for `idleTimeoutMs`. */
export class StreamIdleError extends StreamProtocolError {
  static override readonly marker: string = "loopguard.error.StreamIdleError";
  readonly idleTimeoutMs: number;
  /** Code `stream_idle` (kind `stream_idle`). */
  constructor(idleTimeoutMs: number) {
    super(
      "stream_idle",
      true,
      `[core] the model's stream sent nothing for ${idleTimeoutMs} ms (idleTimeoutMs) and was aborted; the step is retried`,
      { code: "stream_idle" },
    );
    this.idleTimeoutMs = idleTimeoutMs;
  }
}

/** The outcome of one model call made through {@link streamAttempt}. */
export type StreamAttemptOutcome =
  | {
      ok: true;
      response: ModelResponse;
      streamed: boolean;
      firstChunkMs: number | undefined;
      /** Events, deltas and blocks of types this version does not know (skipped or kept unread). */
      skipped: readonly StreamSkip[];
    }
  | {
      ok: false;
      error: unknown;
      /** Whether any content block had started (the host may hold partial text: reset it). */
      hadContent: boolean;
      /** The usage the API reported before the attempt failed (`message_start`), if any. */
      usage: Usage | undefined;
      firstChunkMs: number | undefined;
    };

/** Options of {@link streamAttempt}. */
export interface StreamAttemptOptions {
  signal: AbortSignal;
  /** Abort and fail the attempt when no event arrives for this long. Default 60 000. */
  idleTimeoutMs?: number;
  /** Called with what each event added (text, thinking, a complete block), in order; may be async. */
  onUpdate?: (update: AssemblerUpdate) => void | Promise<void>;
  /**
   * The run's place in line (`RunWriter.order`): a stream whose events arrive faster than the
   * loop takes them yields to the next turn of the event loop past a turn's slice, oldest run first.
   */
  order?: number;
}

/**
 * Makes one model call, streaming when the model can: assembles the events into the final
 * message, reports text and thinking as they arrive and blocks once complete (a tool call only
 * once its JSON parsed), and aborts the call when it goes idle for `idleTimeoutMs`. A model
 * without `stream()` is called through `create()` and its blocks are reported whole.
 *
 * Never throws for a failed call: the outcome says whether content had started (so the
 * caller can reset the host's view) and which usage the API had already reported.
 *
 * @example
 * const outcome = await streamAttempt(model, request, { signal, onUpdate: (u) => ui.show(u) });
 */
export async function streamAttempt(
  model: Model,
  request: ModelRequest,
  options: StreamAttemptOptions,
): Promise<StreamAttemptOutcome> {
  const started = performance.now();
  const { signal, onUpdate } = options;
  if (!model.stream) {
    try {
      const response = await model.create(request, { signal });
      if (onUpdate && response && Array.isArray(response.content)) {
        for (const [index, block] of response.content.entries()) {
          if (block?.type === "text" && block.text !== "")
            await onUpdate({ type: "text", index, text: block.text });
          if (block?.type === "thinking" && block.thinking !== "")
            await onUpdate({ type: "thinking", index, thinking: block.thinking });
          await onUpdate({ type: "block", index, block });
        }
      }
      return {
        ok: true,
        response,
        streamed: false,
        firstChunkMs: undefined,
        skipped: unknownBlocksOf(response),
      };
    } catch (error) {
      return { ok: false, error, hadContent: false, usage: undefined, firstChunkMs: undefined };
    }
  }

  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener("abort", onAbort, { once: true });
  let idle: StreamIdleError | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      idle = new StreamIdleError(idleTimeoutMs);
      controller.abort(idle);
    }, idleTimeoutMs);
    // A stalled stream must not keep the process alive on its own.
    (timer as { unref?: () => void }).unref?.();
  };
  const assembler = createMessageAssembler();
  let firstChunkMs: number | undefined;
  try {
    arm();
    const events = model.stream(request, { signal: controller.signal });
    for await (const event of events) {
      arm();
      const update = assembler.push(event);
      // The first chunk of any kind (usually message_start), as the GenAI conventions time it.
      firstChunkMs ??= performance.now() - started;
      if (update && onUpdate) await onUpdate(update);
      const pause = yieldIfBusy(options.order);
      if (pause) await pause;
    }
    if (idle) throw idle;
    const response = assembler.finish();
    return { ok: true, response, streamed: true, firstChunkMs, skipped: assembler.skipped };
  } catch (error) {
    return {
      ok: false,
      // The abort the watchdog caused surfaces as whatever the model threw for it.
      error: idle && !signal.aborted ? idle : error,
      hadContent: assembler.hasContent,
      usage: assembler.usage,
      firstChunkMs,
    };
  } finally {
    if (timer) clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

/** The content blocks of a whole response whose type the loop does not act on. */
function unknownBlocksOf(response: ModelResponse): StreamSkip[] {
  if (!response || !Array.isArray(response.content)) return [];
  const out: StreamSkip[] = [];
  for (const [index, block] of response.content.entries()) {
    const type = (block as { type?: unknown } | null)?.type;
    if (typeof type === "string" && !knownBlockTypes.has(type))
      out.push({ kind: "block", type: type.slice(0, 200), index });
  }
  return out;
}
