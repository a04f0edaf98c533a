/**
 * A text as detectors should read it, with a map back to the original: compatibility forms
 * folded (NFKC: full-width `＠` and digits become ASCII), zero-width characters and soft
 * hyphens dropped, decimal digits of every script read as ASCII digits, `(at)`/`[at]`/`%40`
 * read as `@` and `(dot)`/`[dot]` as `.`, and seven or more digits spelled as words ("four one
 * five ...") read as digits. Detectors find spans in `text`; `originalSpan` gives the span of
 * the original text to redact, so what is replaced is what was written.
 * @internal
 */
export interface NormalizedView {
  readonly text: string;
  /** The span of the original text behind `[start, end)` of the view. */
  originalSpan(start: number, end: number): [number, number];
  /** Whether the view is the original text unchanged (no map needed). */
  readonly identity: boolean;
}

const IDENTITY_SPAN = (start: number, end: number): [number, number] => [start, end];

// Characters that only split a value for the eye: zero-width space, non-joiner, joiner, word
// joiner, BOM, soft hyphen, and the invisible bidi marks (LRM, RLM, ALM).
function isInvisible(code: number): boolean {
  return (
    (code >= 0x200b && code <= 0x200f) ||
    code === 0x2060 ||
    code === 0xfeff ||
    code === 0x00ad ||
    code === 0x061c ||
    (code >= 0x2061 && code <= 0x2064)
  );
}

const DECIMAL_DIGIT = /^\p{Nd}$/u;
const digitCache = new Map<number, number>();

/** The value of a decimal digit of any script (`٣` is 3), or -1. */
export function digitValue(codePoint: number): number {
  if (codePoint >= 48 && codePoint <= 57) return codePoint - 48;
  if (codePoint < 0x660) return -1;
  let value = digitCache.get(codePoint);
  if (value === undefined) {
    value = -1;
    if (DECIMAL_DIGIT.test(String.fromCodePoint(codePoint))) {
      // Unicode lays decimal digits out as runs of ten starting at zero.
      // Some blocks sit back to back (the mathematical digits), so count the whole run.
      let offset = 0;
      while (offset < 64 && DECIMAL_DIGIT.test(String.fromCodePoint(codePoint - offset - 1)))
        offset++;
      value = offset % 10;
    }
    if (digitCache.size > 4096) digitCache.clear();
    digitCache.set(codePoint, value);
  }
  return value;
}

const nfkcCache = new Map<number, string>();
function nfkc(codePoint: number, char: string): string {
  let folded = nfkcCache.get(codePoint);
  if (folded === undefined) {
    folded = char.normalize("NFKC");
    // Folding "＠" is wanted; folding a letter with a combining mark into a different base
    // length is fine too: every output unit maps to the whole original character.
    if (nfkcCache.size > 8192) nfkcCache.clear();
    nfkcCache.set(codePoint, folded);
  }
  return folded;
}

const NUMBER_WORDS = "zero|oh|one|two|three|four|five|six|seven|eight|nine";
const WORD_VALUE: Record<string, string> = {
  zero: "0",
  oh: "0",
  one: "1",
  two: "2",
  three: "3",
  four: "4",
  five: "5",
  six: "6",
  seven: "7",
  eight: "8",
  nine: "9",
};
/** Cheap test: three digit words in a row, the least a spelled number can start with. */
const SPELLED_HINT = new RegExp(
  `\\b(?:${NUMBER_WORDS})[ ,-]{1,2}(?:${NUMBER_WORDS})[ ,-]{1,2}(?:${NUMBER_WORDS})\\b`,
  "i",
);
const SPELLED_RUN = new RegExp(
  `\\b(?:${NUMBER_WORDS})(?:[ ,-]{1,2}(?:${NUMBER_WORDS})){6,15}\\b`,
  "gi",
);
const SPELLED_WORD = new RegExp(NUMBER_WORDS, "gi");
const OBFUSCATED_HINT = /%40|[([{] ?(?:at|dot) ?[)\]}]/i;
const OBFUSCATED = /[ \t]*(?:[([{][ \t]*(at|dot)[ \t]*[)\]}])[ \t]*|%40/gi;
// Anything outside ASCII (the fallback where Buffer is missing).
const NOT_PLAIN = /[^\x00-\x7f]/;

/**
 * The normalised view of `text`. Plain ASCII text without `(at)`, `%40` or spelled digits is
 * its own view (no copy, no map), which is the common case and costs three scans.
 * @internal
 */
export function normalizedView(text: string): NormalizedView {
  // Byte length equals length only for ASCII: a native count, far faster than a regex scan.
  const unicode =
    typeof Buffer === "undefined"
      ? NOT_PLAIN.test(text)
      : Buffer.byteLength(text, "utf8") !== text.length;
  const obfuscated = OBFUSCATED_HINT.test(text);
  const spelled = SPELLED_HINT.test(text);
  if (!unicode && !obfuscated && !spelled) {
    return { text, originalSpan: IDENTITY_SPAN, identity: true };
  }
  let view = text;
  let starts: Int32Array | undefined;
  let ends: Int32Array | undefined;
  if (unicode) {
    // Typed arrays, grown when NFKC expands a character (rare): this runs on every text with
    // a non-ASCII character, so it must cost a few nanoseconds per character.
    let capacity = text.length + 16;
    let startMap = new Int32Array(capacity);
    let endMap = new Int32Array(capacity);
    let length = 0;
    const parts: string[] = [];
    let plainFrom = 0;
    const ensure = (extra: number) => {
      if (length + extra <= capacity) return;
      capacity = Math.max(capacity * 2, length + extra);
      const grownStarts = new Int32Array(capacity);
      grownStarts.set(startMap);
      startMap = grownStarts;
      const grownEnds = new Int32Array(capacity);
      grownEnds.set(endMap);
      endMap = grownEnds;
    };
    const flushPlain = (to: number) => {
      if (plainFrom >= to) return;
      parts.push(text.slice(plainFrom, to));
      ensure(to - plainFrom);
      for (let at = plainFrom; at < to; at++) {
        startMap[length] = at;
        endMap[length++] = at + 1;
      }
    };
    for (let index = 0; index < text.length; ) {
      const code = text.charCodeAt(index);
      if (code < 0x80) {
        index++;
        continue;
      }
      const codePoint = text.codePointAt(index)!;
      const next = index + (codePoint > 0xffff ? 2 : 1);
      let written: string | undefined;
      if (isInvisible(codePoint)) written = "";
      else {
        const digit = digitValue(codePoint);
        if (digit >= 0) written = String(digit);
        else {
          const original = text.slice(index, next);
          const folded = nfkc(codePoint, original);
          // Most characters fold to themselves: they stay in the plain run.
          if (folded !== original) written = folded;
        }
      }
      if (written !== undefined) {
        flushPlain(index);
        parts.push(written);
        ensure(written.length);
        for (let unit = 0; unit < written.length; unit++) {
          startMap[length] = index;
          endMap[length++] = next;
        }
        plainFrom = next;
      }
      index = next;
    }
    flushPlain(text.length);
    view = parts.length === 1 ? parts[0]! : parts.join("");
    starts = startMap.subarray(0, length);
    ends = endMap.subarray(0, length);
  }
  if (
    obfuscated ||
    spelled ||
    (unicode && (OBFUSCATED_HINT.test(view) || SPELLED_HINT.test(view)))
  ) {
    const replaced = rewrite(view, starts, ends);
    view = replaced.text;
    starts = replaced.starts;
    ends = replaced.ends;
  }
  if (starts === undefined || ends === undefined) {
    return { text, originalSpan: IDENTITY_SPAN, identity: true };
  }
  const startMap = starts;
  const endMap = ends;
  return {
    text: view,
    identity: false,
    originalSpan(start, end) {
      return [startMap[start]!, endMap[end - 1]!];
    },
  };
}

/** Replaces `(at)`, `%40`, `(dot)` and spelled digit runs, composing the maps. */
function rewrite(
  text: string,
  starts: Int32Array | undefined,
  ends: Int32Array | undefined,
): { text: string; starts: Int32Array; ends: Int32Array } {
  const startOf = (at: number) => (starts === undefined ? at : starts[at]!);
  const endOf = (at: number) => (ends === undefined ? at + 1 : ends[at]!);
  const edits: {
    start: number;
    end: number;
    parts: { text: string; from: number; to: number }[];
  }[] = [];
  OBFUSCATED.lastIndex = 0;
  for (let match = OBFUSCATED.exec(text); match !== null; match = OBFUSCATED.exec(text)) {
    const word = match[1]?.toLowerCase();
    edits.push({
      start: match.index,
      end: match.index + match[0].length,
      parts: [
        {
          text: word === "dot" ? "." : "@",
          from: match.index,
          to: match.index + match[0].length,
        },
      ],
    });
  }
  SPELLED_RUN.lastIndex = 0;
  for (let match = SPELLED_RUN.exec(text); match !== null; match = SPELLED_RUN.exec(text)) {
    const parts: { text: string; from: number; to: number }[] = [];
    SPELLED_WORD.lastIndex = 0;
    for (
      let word = SPELLED_WORD.exec(match[0]);
      word !== null;
      word = SPELLED_WORD.exec(match[0])
    ) {
      const from = match.index + word.index;
      parts.push({ text: WORD_VALUE[word[0].toLowerCase()]!, from, to: from + word[0].length });
    }
    edits.push({ start: match.index, end: match.index + match[0].length, parts });
  }
  edits.sort((left, right) => left.start - right.start);
  // Every edit shortens the text ("(at)" to "@", "five" to "5"), so its length bounds the view.
  const newStarts = new Int32Array(text.length + 1);
  const newEnds = new Int32Array(text.length + 1);
  const parts: string[] = [];
  let length = 0;
  let last = 0;
  const copy = (from: number, to: number) => {
    if (from >= to) return;
    parts.push(text.slice(from, to));
    if (starts === undefined || ends === undefined) {
      for (let at = from; at < to; at++) {
        newStarts[length] = at;
        newEnds[length++] = at + 1;
      }
    } else {
      newStarts.set(starts.subarray(from, to), length);
      newEnds.set(ends.subarray(from, to), length);
      length += to - from;
    }
  };
  for (const edit of edits) {
    if (edit.start < last) continue;
    copy(last, edit.start);
    for (const part of edit.parts) {
      parts.push(part.text);
      for (let unit = 0; unit < part.text.length; unit++) {
        newStarts[length] = startOf(part.from);
        newEnds[length++] = endOf(part.to - 1);
      }
    }
    last = edit.end;
  }
  copy(last, text.length);
  const out = parts.join("");
  return { text: out, starts: newStarts.subarray(0, length), ends: newEnds.subarray(0, length) };
}
