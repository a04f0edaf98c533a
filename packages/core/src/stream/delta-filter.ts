import { InvalidArgumentError } from "../errors.js";

/** A text transform applied to streamed text before the host sees it (a vault's `tokenize`, a redactor). */
export type TextTransform = (text: string) => string;

/** Options of {@link createDeltaFilter}. */
export interface DeltaFilterOptions {
  /** Transforms applied in order to each piece of text let through (vault first, then redaction). */
  transforms: readonly TextTransform[];
  /**
   * A streaming redactor (e.g. `() => createRedactionStream({ holdBack: 256 })` from
   * `@loopguard/redact`), applied after `transforms`; it holds back what it needs itself.
   */
  redactStream?: (() => TransformStream<string, string>) | undefined;
  /** Characters held back so a value split across two deltas is seen whole. Default {@link defaultStreamHoldBack}. */
  streamHoldBack?: number;
}

/** A per-block filter: text in as deltas arrive, text out once it is safe to show. */
export interface DeltaFilter {
  /** Takes a delta; resolves with the text that may be shown now (possibly empty). */
  push(text: string): Promise<string>;
  /** The block ended: resolves with everything still held, transformed. */
  flush(): Promise<string>;
}

/**
 * The default holdback, in characters (64). Cuts fall on whitespace, so a value without
 * whitespace (an email, an API key, a JWT) is never split unless it is longer than the
 * whitespace search window plus the holdback (256 + 64 = 320 characters); a value with inner
 * spaces (a phone, card or IBAN number) is caught whole up to 64 characters.
 */
export const defaultStreamHoldBack = 64;

/** Text held beyond the holdback before a cut is forced (fail closed: the pieces are still transformed). */
export const maxExtraHeld = 1024;

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/**
 * Creates a filter for one streamed block. Deltas are buffered; text is let through only up to
 * a cut that (1) leaves at least `streamHoldBack` characters held, (2) falls on whitespace when there
 * is any in the 256 characters before it, and (3) does not change what the transforms do:
 * `t(head) + t(tail)` must equal `t(head + tail)`, so no value the transforms would catch is
 * split by the cut. Held text never exceeds `streamHoldBack + 1024` characters: past that the cut is
 * made anyway (the pieces are still transformed; only a value longer than that can be missed).
 * With no transforms and no `redactStream`, text passes straight through with no holdback.
 *
 * @example
 * const filter = createDeltaFilter({ transforms: [vault.tokenize, redactText] });
 * ui.write(await filter.push(delta)); // ... at the block's end:
 * ui.write(await filter.flush());
 */
export function createDeltaFilter(options: DeltaFilterOptions): DeltaFilter {
  const streamHoldBack = options.streamHoldBack ?? defaultStreamHoldBack;
  if (!Number.isInteger(streamHoldBack) || streamHoldBack < 0) {
    throw new InvalidArgumentError(
      `[core] streamHoldBack must be a non-negative integer number of characters, got ${String(options.streamHoldBack)}`,
    );
  }
  const transforms = options.transforms;
  const apply = (text: string): string => {
    let out = text;
    for (const transform of transforms) out = transform(out);
    return out;
  };
  const stream = options.redactStream ? adapt(options.redactStream()) : undefined;
  if (transforms.length === 0 && !stream) {
    return { push: async (text) => text, flush: async () => "" };
  }
  let buffer = "";
  const maxHeld = streamHoldBack + maxExtraHeld;

  const cutPoint = (): number => {
    const limit = buffer.length - streamHoldBack;
    if (limit <= 0) return 0;
    const candidates: number[] = [];
    for (let index = limit, floor = Math.max(0, limit - 256); index > floor; index -= 1) {
      if (isSpace(buffer.charCodeAt(index - 1))) candidates.push(index);
      if (candidates.length >= 4) break;
    }
    if (candidates.length === 0) candidates.push(limit);
    if (transforms.length === 0) return candidates[0]!;
    const whole = apply(buffer);
    for (const cut of candidates) {
      if (apply(buffer.slice(0, cut)) + apply(buffer.slice(cut)) === whole) return cut;
    }
    return buffer.length > maxHeld ? candidates[0]! : 0;
  };

  const out = async (text: string): Promise<string> => {
    if (text === "") return "";
    const transformed = apply(text);
    return stream ? stream.write(transformed) : transformed;
  };

  return {
    async push(text) {
      buffer += text;
      const cut = cutPoint();
      if (cut <= 0) return stream ? stream.write("") : "";
      const head = buffer.slice(0, cut);
      buffer = buffer.slice(cut);
      return out(head);
    },
    async flush() {
      const rest = buffer;
      buffer = "";
      const text = await out(rest);
      return stream ? text + (await stream.close()) : text;
    },
  };
}

/** Drives a web TransformStream one write at a time, collecting what it has let out so far. */
function adapt(transform: TransformStream<string, string>) {
  const writer = transform.writable.getWriter();
  const reader = transform.readable.getReader();
  let collected = "";
  let failure: unknown;
  const pump = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        collected += value;
      }
    } catch (error) {
      failure = error;
    }
  })();
  const take = () => {
    if (failure) throw failure;
    const text = collected;
    collected = "";
    return text;
  };
  return {
    async write(text: string): Promise<string> {
      if (text !== "") await writer.write(text);
      // Let the readable side deliver what the transform enqueued for this write.
      await new Promise<void>((resolve) => setImmediate(resolve));
      return take();
    },
    async close(): Promise<string> {
      await writer.close();
      await pump;
      return take();
    },
  };
}
