/**
 * Features of the learned detector: hashed word unigrams and bigrams and character 3- to
 * 5-grams of normalised text, summed over segments. The training script (training/train.mjs)
 * and the scanner use these same functions, so a model trained here scores the same way.
 */
import { normalizeText } from "./normalize-text.js";

/** A segment of text: a line, a sentence, an HTML comment or a JSON field, in original offsets. */
export interface TextSegment {
  /** Start and end offsets in the original text (UTF-16 code units). */
  start: number;
  end: number;
  /** Start and end in the normalised text. */
  normalizedStart: number;
  normalizedEnd: number;
}

/** Hashed feature indices of one piece of normalised text, into `dimensions` buckets (a power of two). */
export type FeatureSink = (index: number) => void;

const fnvPrime = 0x01000193;
const fnvBasis = 0x811c9dc5;

/** Whether a UTF-16 unit is part of a word (letters, digits, CJK, marks). */
function isWordUnit(code: number): boolean {
  if (code < 0x80) {
    return (
      (code >= 0x61 && code <= 0x7a) ||
      (code >= 0x30 && code <= 0x39) ||
      (code >= 0x41 && code <= 0x5a)
    );
  }
  // Everything outside ASCII that is not punctuation or space counts as a word character: the
  // normaliser has already folded compatibility forms, and CJK runs are handled by n-grams.
  return (
    !(code >= 0x2000 && code <= 0x206f) &&
    !(code >= 0x3000 && code <= 0x3003) &&
    code !== 0xa0 &&
    !(code >= 0xff01 && code <= 0xff0f)
  );
}

/**
 * Emits the feature indices of `text[start, end)` (already normalised): one per word, one per
 * pair of adjacent words, one per character 3-, 4- and 5-gram. Returns how many were emitted.
 */
export function emitFeatures(
  text: string,
  start: number,
  end: number,
  mask: number,
  sink: FeatureSink,
): number {
  let count = 0;
  // Character n-grams, with the segment framed by spaces so word starts and ends are marked.
  for (let index = start - 1; index < end - 2; index++) {
    let hash = fnvBasis;
    for (let size = 0; size < 5; size++) {
      const at = index + size;
      if (at > end) break;
      const code = at < start || at >= end ? 0x20 : text.charCodeAt(at);
      hash = Math.imul(hash ^ code, fnvPrime);
      if (size >= 2) {
        sink((hash ^ (size * 0x9e3779b1)) & mask);
        count++;
      }
    }
  }
  // Words and bigrams.
  let word = fnvBasis;
  let inWord = false;
  let previous = 0;
  let hasPrevious = false;
  for (let index = start; index <= end; index++) {
    const code = index < end ? text.charCodeAt(index) : 0x20;
    if (isWordUnit(code)) {
      word = Math.imul(word ^ code, fnvPrime);
      inWord = true;
      continue;
    }
    if (!inWord) continue;
    const unigram = Math.imul(word ^ 0x77, fnvPrime);
    sink(unigram & mask);
    count++;
    if (hasPrevious) {
      sink((Math.imul(previous ^ 0x5bd1e995, fnvPrime) ^ unigram) & mask);
      count++;
    }
    previous = unigram;
    hasPrevious = true;
    word = fnvBasis;
    inWord = false;
  }
  return count;
}

const maxSegment = 400;
const minSegment = 24;

/**
 * Splits normalised text into segments: lines, sentences (`.`, `!`, `?` and their CJK forms
 * followed by a space or the end), HTML comments, and JSON string fields; pieces shorter than
 * 24 characters join the next, longer than 400 are cut. Linear in the text.
 */
export function segmentText(normalized: string, offsets: Int32Array): TextSegment[] {
  const cuts: number[] = [0];
  const length = normalized.length;
  for (let index = 0; index < length; index++) {
    const code = normalized.charCodeAt(index);
    if (code === 0x0a) cuts.push(index + 1);
    else if (code === 0x2e || code === 0x21 || code === 0x3f) {
      const next = normalized.charCodeAt(index + 1);
      if (index + 1 >= length || next === 0x20 || next === 0x0a || next === 0x22)
        cuts.push(index + 1);
    } else if (code === 0x3002 || code === 0xff01 || code === 0xff1f || code === 0x061f)
      cuts.push(index + 1);
    else if (code === 0x3c && normalized.startsWith("<!--", index)) cuts.push(index);
    else if (code === 0x3e && index >= 2 && normalized.startsWith("-->", index - 2))
      cuts.push(index + 1);
    // A new JSON field: `", "key"` or `","key"`.
    else if (code === 0x2c && normalized.charCodeAt(index - 1) === 0x22) cuts.push(index + 1);
  }
  cuts.push(length);
  const segments: TextSegment[] = [];
  let pending = -1;
  for (let index = 0; index + 1 < cuts.length; index++) {
    let from = pending >= 0 ? pending : cuts[index]!;
    const to = cuts[index + 1]!;
    if (to <= from) continue;
    if (to - from < minSegment && index + 2 < cuts.length) {
      pending = from;
      continue;
    }
    pending = -1;
    while (to - from > maxSegment) {
      // Cut long pieces at a space near the limit where there is one.
      // Look back at most half a segment for a space (lastIndexOf alone would scan back to the
      // start of a text without spaces, quadratic over many cuts).
      let cut = from + maxSegment;
      while (cut > from + maxSegment / 2 && normalized.charCodeAt(cut) !== 0x20) cut--;
      if (cut <= from + maxSegment / 2) cut = from + maxSegment;
      segments.push(segmentAt(from, cut, offsets));
      from = cut;
    }
    if (/\S/.test(normalized.slice(from, to))) segments.push(segmentAt(from, to, offsets));
  }
  if (pending >= 0 && pending < length) segments.push(segmentAt(pending, length, offsets));
  return segments;
}

function segmentAt(from: number, to: number, offsets: Int32Array): TextSegment {
  return { start: offsets[from]!, end: offsets[to]!, normalizedStart: from, normalizedEnd: to };
}

/** Normalises text the way the detector reads it (NFKC, lower case, look-alikes folded). */
export function detectorView(text: string): { text: string; offsets: Int32Array } {
  const normalized = normalizeText(text, { foldHomoglyphs: true });
  return { text: normalized.text, offsets: normalized.offsets };
}

/**
 * The feature vector of a whole text as `[index, value]` pairs (values are counts divided by
 * the square root of the total count), for the training script.
 */
export function featureVector(text: string, dimensions: number): Array<[number, number]> {
  const view = detectorView(text);
  const counts = new Map<number, number>();
  const total = emitFeatures(view.text, 0, view.text.length, dimensions - 1, (index) => {
    counts.set(index, (counts.get(index) ?? 0) + 1);
  });
  const scale = total > 0 ? 1 / Math.sqrt(total) : 0;
  return [...counts].map(([index, count]) => [index, count * scale]);
}
