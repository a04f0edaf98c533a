import { createSha256 } from "./digest.js";

/**
 * The default cap on one tool output the model sees: 100,000 characters, about 25,000 tokens
 * at ~4 characters a token, an eighth of a 200k-token context window. A run can carry a few
 * such outputs and still leave room for the system prompt, the tools and the answer; the API's
 * request size limit (32 MB) is never near.
 */
export const defaultMaxOutputChars = 100_000;
/** Below this, the marker itself would crowd out the output. */
export const minOutputChars = 1_000;
/** Characters hashed between two yields to the event loop (~2-4 ms of SHA-256). */
const hashSliceChars = 1 << 20;
/**
 * Characters tokenised between two yields: a vault scans for personal data at roughly
 * 10-30 MB/s, so 64 Ki characters are a few milliseconds.
 */
const mapSliceChars = 1 << 16;

/** What was cut from an output: its whole length, what was removed and the whole text's digest. */
export interface OutputCut {
  /** Characters (UTF-16 code units) of the whole output. */
  chars: number;
  /** Characters removed from the middle. */
  removedChars: number;
  /** SHA-256 (hex) of the whole output's UTF-8 bytes, as the tool returned it. */
  sha256: string;
}

/** An output cut to its cap: the text the model sees, and what was cut (absent if nothing). */
export interface LimitedOutput {
  text: string;
  cut?: OutputCut;
}

/**
 * Cuts `text` to at most `maxChars` characters: the head (two thirds) and the tail (one third)
 * around a marker saying how much was cut and how to ask for the rest. Hashes the whole text in
 * slices that yield to the event loop, so a 50 MB output never blocks other runs for long.
 */
export async function limitOutput(
  text: string,
  maxChars: number,
  tool: string,
): Promise<LimitedOutput> {
  if (text.length <= maxChars) return { text };
  const sha256 = await sha256InSlices(text);
  // The marker's length depends on the counts in it: size it with the largest count first.
  const markerFor = (removed: number) =>
    `\n\n[loopguard: ${removed.toLocaleString("en-US")} of ${text.length.toLocaleString("en-US")} characters cut from the middle of this ${tool} output (limit ${maxChars.toLocaleString("en-US")}; sha256 ${sha256.slice(0, 16)}). To see the cut part, call ${tool} again for a narrower slice (a filter, page, offset or smaller range, if its input has one).]\n\n`;
  const room = maxChars - markerFor(text.length).length;
  const headEnd = safeBoundary(text, Math.floor((room * 2) / 3));
  // Rounded up off a surrogate pair, so head + tail never exceeds the room.
  let tailStart = text.length - (room - headEnd);
  if (tailStart < text.length && safeBoundary(text, tailStart) !== tailStart) tailStart += 1;
  const removed = tailStart - headEnd;
  // The real marker is never longer than the sized one, so head + marker + tail fits.
  const marker = markerFor(removed);
  return {
    text: `${text.slice(0, headEnd)}${marker}${text.slice(tailStart)}`,
    cut: { chars: text.length, removedChars: removed, sha256 },
  };
}

/** SHA-256 of a string's UTF-8 bytes, in slices with a yield to the event loop between them. */
export async function sha256InSlices(text: string): Promise<string> {
  const hash = createSha256();
  for (let start = 0; start < text.length; ) {
    const end = safeBoundary(text, Math.min(text.length, start + hashSliceChars));
    hash.update(text.slice(start, end));
    start = end;
    if (start < text.length) await yieldToEventLoop();
  }
  return hash.hexDigest();
}

/**
 * Applies `map` (the vault's tokenise) to a long text piece by piece, yielding between pieces.
 * Pieces end at a line break where there is one (else at whitespace), so a value the map
 * recognises (an email, a card number) is not split between two pieces.
 */
export async function mapInSlices(text: string, map: (piece: string) => string): Promise<string> {
  if (text.length <= mapSliceChars) return map(text);
  const parts: string[] = [];
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + mapSliceChars);
    if (end < text.length) {
      const newline = text.lastIndexOf("\n", end);
      if (newline > start) end = newline + 1;
      else {
        const space = lastWhitespace(text, start, end);
        if (space > start) end = space + 1;
        else end = safeBoundary(text, end);
      }
    }
    parts.push(map(text.slice(start, end)));
    start = end;
    if (start < text.length) await yieldToEventLoop();
  }
  return parts.join("");
}

/** Lets timers and I/O of other runs go first. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function lastWhitespace(text: string, start: number, end: number): number {
  for (let index = end - 1; index > start; index--) {
    const code = text.charCodeAt(index);
    if (code === 32 || code === 9 || code === 13) return index;
  }
  return -1;
}

/** Moves an index off the middle of a surrogate pair (never splits a character). */
function safeBoundary(text: string, index: number): number {
  if (index <= 0) return 0;
  if (index >= text.length) return text.length;
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff ? index - 1 : index;
}
