/**
 * Normalisation of text before matching: undoes what attackers use to hide instructions
 * (compatibility forms, invisible characters, look-alike letters, markup) while keeping a map
 * from every normalised character back to its offset in the original text, so findings point
 * at what the user actually sent.
 */

import { latinLookAlikes } from "@loopguard/core/plugin";
import { createAsciiReader, createUnitReader } from "./ascii-bytes.js";
import {
  base64Class,
  type EncodedRuns,
  encodedClasses,
  hexClass,
  minBase64,
  minHex,
} from "./decode-segments.js";

/** Text after normalisation, with offsets back into the original. */
export interface NormalizedText {
  /** The normalised text: NFKC, lower case, Latin accents removed, invisible characters removed, whitespace collapsed. */
  text: string;
  /**
   * `offsets[i]` is the offset in the original text of normalised character `i`;
   * `offsets[text.length]` is the original length.
   */
  offsets: Int32Array;
  /** How many invisible characters (zero-width, bidi controls, tag characters) were removed or decoded. */
  invisible: number;
  /** How many Unicode tag characters (U+E0020..U+E007E, "ASCII smuggling") were decoded. */
  tagCharacters: number;
  /** How many HTML character references (`&lt;`, `&#x3c;`, ...) were decoded. */
  entities: number;
  /** Spans (normalised offsets) of words that mixed Latin with Cyrillic or Greek look-alikes and were folded. */
  mixedScript: Array<[number, number]>;
}

/** Options of {@link normalizeText}. */
export interface NormalizeOptions {
  /** Fold Cyrillic and Greek look-alikes inside words that also hold Latin letters. Default `true`. */
  foldHomoglyphs?: boolean;
}

const cache = new Map<number, string>();

/** Turns UTF-16 units into a string (Buffer's decoder is about three times TextDecoder's speed). */
export function unitsToString(units: Uint16Array, size: number): string {
  return Buffer.from(units.buffer, units.byteOffset, size * 2).toString("utf16le");
}

/** Whether a non-ASCII UTF-16 unit is whitespace. */
function isSpaceUnit(code: number): boolean {
  return (
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}

/** Characters that carry no visible glyph: zero-width, joiners, bidi controls, BOM, soft hyphen. */
function isInvisible(cp: number): boolean {
  return (
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x206f) ||
    cp === 0xfeff ||
    cp === 0x00ad ||
    cp === 0x034f ||
    cp === 0x180e ||
    cp === 0x061c ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    (cp >= 0xe0100 && cp <= 0xe01ef) ||
    (cp >= 0xfff9 && cp <= 0xfffb)
  );
}

/** Whether a code point is a Latin letter with possible accents (accents are dropped for matching). */
function isLatinExtended(cp: number): boolean {
  return (cp >= 0xc0 && cp <= 0x24f) || (cp >= 0x1e00 && cp <= 0x1eff);
}

/** The normalised form of one non-ASCII code point (cached: text repeats its characters). */
function normalizeCodePoint(cp: number): string {
  const result = cache.get(cp);
  if (result !== undefined) return result;
  let text = String.fromCodePoint(cp).normalize("NFKC");
  if (isLatinExtended(cp) || /[\u00c0-\u024f\u1e00-\u1eff]/.test(text)) {
    text = text.normalize("NFD").replace(/[\u0300-\u036f]/g, "");
  }
  text = text
    .replace(/[\u2018\u2019\u201b\u02bc\u2032\uff07]/g, "'")
    .replace(/[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]/g, "-")
    .replace(/[\u201c\u201d\u201f\u2033]/g, '"')
    .toLowerCase();
  if (cache.size < 20_000) cache.set(cp, text);
  return text;
}

/** Look-alike letters, folded only inside mixed-script words: core's table, shared with policy. */
const homoglyphs = latinLookAlikes;

const namedEntities: Record<string, number> = {
  lt: 0x3c,
  gt: 0x3e,
  amp: 0x26,
  quot: 0x22,
  apos: 0x27,
  nbsp: 0x20,
  sol: 0x2f,
  bsol: 0x5c,
  lsqb: 0x5b,
  rsqb: 0x5d,
  lpar: 0x28,
  rpar: 0x29,
  colon: 0x3a,
  num: 0x23,
  excl: 0x21,
  equals: 0x3d,
  vert: 0x7c,
  lowbar: 0x5f,
  period: 0x2e,
  comma: 0x2c,
  semi: 0x3b,
  quest: 0x3f,
  commat: 0x40,
  lbrace: 0x7b,
  rbrace: 0x7d,
  newline: 0x0a,
  tab: 0x09,
  zwsp: 0x200b,
  zwj: 0x200d,
  zwnj: 0x200c,
  shy: 0xad,
  lsquo: 0x2018,
  rsquo: 0x2019,
  ldquo: 0x201c,
  rdquo: 0x201d,
  hyphen: 0x2010,
  dash: 0x2010,
  ndash: 0x2013,
  mdash: 0x2014,
};
const entityPattern = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]{2,8}));?/y;

/** Decodes the HTML character reference at `index`, if there is one. */
function decodeEntity(
  input: string,
  index: number,
): { codePoint: number; length: number } | undefined {
  entityPattern.lastIndex = index;
  const match = entityPattern.exec(input);
  if (!match) return undefined;
  let cp: number | undefined;
  if (match[1] !== undefined) cp = Number.parseInt(match[1], 10);
  else if (match[2] !== undefined) cp = Number.parseInt(match[2], 16);
  else {
    if (!match[0].endsWith(";")) return undefined;
    cp = namedEntities[match[3]!.toLowerCase()];
  }
  if (cp === undefined || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp === 0)
    return undefined;
  return { codePoint: cp, length: match[0].length };
}

const lookAlikeGlobal = /[\u0370-\u052f\u0250-\u02af]/g;

/** Whether a UTF-16 unit belongs to a word (letters of the scripts we fold, and digits). */
function isWordUnit(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 48 && code <= 57) ||
    (code >= 0xc0 && code <= 0x52f) ||
    (code >= 0x1e00 && code <= 0x1fff)
  );
}
const latinLetter = /[a-z]/;
const asciiDigit = /[0-9]/;
const lookAlikeLetter = /[\u0370-\u03ff\u0400-\u04ff\u0500-\u052f\u0250-\u02af]/;

/**
 * The normalisation of text already known to be plain (see `isPlainAscii`): lower case, every
 * character at its own offset. With `shared`, the offsets are a shared array that may be longer
 * than the text (read only `0..length`, never write). @internal
 */
export function plainNormalized(input: string, shared = false): NormalizedText {
  const length = input.length;
  if (identity.length <= length) {
    identity = new Int32Array(Math.max(length + 1, identity.length * 2));
    for (let index = 0; index < identity.length; index++) identity[index] = index;
  }
  return {
    text: input.toLowerCase(),
    // `shared`: the caller only reads offsets 0..length and never changes them, so the one
    // identity array (longer than needed) serves without a copy.
    offsets: shared ? identity : identity.slice(0, length + 1),
    invisible: 0,
    tagCharacters: 0,
    entities: 0,
    mixedScript: [],
  };
}

/**
 * The normalisation of ASCII text without `&` (no entity to decode): lower case and collapsed
 * whitespace, in one loop over bytes. Gives what `normalizeText` gives. @internal
 */
export function asciiNormalized(input: string): NormalizedText {
  const bytes = readAscii(input);
  if (bytes === undefined || bytes.includes(0x26)) return normalizeText(input);
  const length = bytes.length;
  const units = new Uint8Array(length + 1);
  const offsets = new Int32Array(length + 1);
  let size = 0;
  let pendingSpace = -1;
  let pendingNewline = false;
  for (let index = 0; index < length; index++) {
    const code = bytes[index]!;
    if (code === 32 || (code >= 9 && code <= 13)) {
      if (pendingSpace < 0) pendingSpace = index;
      if (code === 10 || code === 13) pendingNewline = true;
      continue;
    }
    if (pendingSpace >= 0) {
      if (size > 0) {
        units[size] = pendingNewline ? 10 : 32;
        offsets[size] = pendingSpace;
        size += 1;
      }
      pendingSpace = -1;
      pendingNewline = false;
    }
    units[size] = code >= 0x41 && code <= 0x5a ? code + 32 : code;
    offsets[size] = index;
    size += 1;
  }
  offsets[size] = length;
  return {
    text: Buffer.from(units.buffer, 0, size).toString("latin1"),
    offsets: offsets.subarray(0, size + 1),
    invisible: 0,
    tagCharacters: 0,
    entities: 0,
    mixedScript: [],
  };
}

/** 0..length, copied out for the offsets of plain ASCII text. */
let identity = new Int32Array(0);

/**
 * Whether normalising `input` only lower-cases it: printable ASCII without `&`, words separated
 * by single spaces or line breaks, no space at either end. Most tool output is like this.
 */
function isPlainAscii(input: string): boolean {
  const length = input.length;
  if (length === 0) return true;
  const bytes = readAscii(input);
  if (bytes === undefined) return false;
  let previousSpace = true;
  for (let index = 0; index < length; index++) {
    const code = bytes[index]!;
    if (code > 32) {
      if (code === 0x7f || code === 0x26) return false;
      previousSpace = false;
    } else if (code === 32 || code === 10) {
      if (previousSpace) return false;
      previousSpace = true;
    } else return false;
  }
  return !previousSpace;
}

const readAscii = createAsciiReader();

const readUnits = createUnitReader();

/** The growing output of `normalizeText`: units, their offsets, and the pending whitespace. */
class UnitBuilder {
  units: Uint16Array;
  offsets: Int32Array;
  size = 0;
  /** Offset of the first whitespace since the last unit, or -1. */
  pendingSpace = -1;
  pendingNewline = false;

  constructor(capacity: number) {
    this.units = new Uint16Array(capacity);
    this.offsets = new Int32Array(capacity);
  }

  /** Appends a unit that is not whitespace, after the separator of pending whitespace. */
  push(code: number, at: number): void {
    if (this.size + 2 >= this.units.length) this.grow();
    if (this.pendingSpace >= 0) {
      if (this.size > 0) {
        this.units[this.size] = this.pendingNewline ? 10 : 32;
        this.offsets[this.size] = this.pendingSpace;
        this.size += 1;
      }
      this.pendingSpace = -1;
      this.pendingNewline = false;
    }
    this.units[this.size] = code;
    this.offsets[this.size] = at;
    this.size += 1;
  }

  /** Appends any unit: whitespace (ASCII or not) becomes pending. */
  add(code: number, at: number): void {
    if (code === 32 || (code >= 9 && code <= 13) || (code >= 0x80 && isSpaceUnit(code))) {
      if (this.pendingSpace < 0) this.pendingSpace = at;
      if (code === 10 || code === 13) this.pendingNewline = true;
      return;
    }
    this.push(code, at);
  }

  addText(text: string, at: number): void {
    for (let k = 0; k < text.length; k++) this.add(text.charCodeAt(k), at);
  }

  grow(): void {
    const units = new Uint16Array(this.units.length * 2 + 16);
    units.set(this.units);
    this.units = units;
    const offsets = new Int32Array(this.offsets.length * 2 + 16);
    offsets.set(this.offsets);
    this.offsets = offsets;
  }
}

/**
 * Normalises text for matching and keeps offsets back into the original.
 *
 * Applies Unicode NFKC per character (full-width and mathematical letters become ASCII), lower
 * case, drops accents of Latin letters, removes zero-width and bidi characters, decodes Unicode
 * tag characters to the ASCII they hide, folds Cyrillic and Greek look-alikes inside words that
 * also hold Latin letters, unifies quotes and dashes, and collapses whitespace (a run holding a
 * line break becomes `\n`, any other run one space). Linear in the length of the text.
 *
 * @example
 * normalizeText("Ｉｇｎｏｒｅ\u200b рrevious").text; // "ignore previous"
 */
export function normalizeText(input: string, options: NormalizeOptions = {}): NormalizedText {
  if (typeof input !== "string")
    throw new TypeError("[injection] normalizeText(text): text must be a string");
  if (isPlainAscii(input)) return plainNormalized(input);
  return normalizeWithRuns(input, options).normalized;
}

/**
 * `normalizeText` that also finds the candidates of `findEncodedSegments` in the same loop over
 * the original text (for text that is not ASCII, which the prefilter pass does not read). @internal
 */
export function normalizeWithRuns(
  input: string,
  options: NormalizeOptions = {},
): { normalized: NormalizedText; runs: EncodedRuns } {
  const length = input.length;
  const base64: number[] = [];
  // The last unit outside a base64 run and outside a hex run (see scanEncodedRuns).
  let base64Break = -1;
  let hexBreak = -1;
  let longHex = false;
  const source = readUnits(input);
  // Normalised UTF-16 units and their offsets; NFKC can grow the text, so both buffers grow.
  const out = new UnitBuilder(length + 16);
  let invisible = 0;
  let tagCharacters = 0;
  let entities = 0;
  for (let index = 0; index < length; ) {
    const code = source[index]!;
    const kind = code < 128 ? encodedClasses[code]! : 0;
    if ((kind & hexClass) === 0) {
      if (index - hexBreak > minHex) longHex = true;
      hexBreak = index;
    }
    if ((kind & base64Class) === 0) {
      if (index - base64Break > minBase64) base64.push(base64Break + 1, index);
      base64Break = index;
    }
    if (code < 0x80 && code !== 0x26) {
      // ASCII, inline: most of any text.
      if (code === 32 || (code >= 9 && code <= 13)) {
        if (out.pendingSpace < 0) out.pendingSpace = index;
        if (code === 10 || code === 13) out.pendingNewline = true;
      } else out.push(code >= 0x41 && code <= 0x5a ? code + 32 : code, index);
      index += 1;
      continue;
    }
    if (code === 0x26) {
      const entity = decodeEntity(input, index);
      if (entity) {
        entities += 1;
        const cp = entity.codePoint;
        if (cp < 0x80) out.add(cp >= 0x41 && cp <= 0x5a ? cp + 32 : cp, index);
        else if (!isInvisible(cp)) out.addText(normalizeCodePoint(cp), index);
        // The units of the reference after "&" still count for the encoded runs: the same run
        // bookkeeping as at the top of the loop, written out again on purpose: a helper would
        // have to write hexBreak, base64Break and longHex through a closure, making them context
        // variables of this per-character loop (the scanner's cost: bench/per-call.mjs).
        for (let skipped = index + 1; skipped < index + entity.length; skipped++) {
          const unit = source[skipped]!;
          const unitKind = unit < 128 ? encodedClasses[unit]! : 0;
          if ((unitKind & hexClass) === 0) {
            if (skipped - hexBreak > minHex) longHex = true;
            hexBreak = skipped;
          }
          if ((unitKind & base64Class) === 0) {
            if (skipped - base64Break > minBase64) base64.push(base64Break + 1, skipped);
            base64Break = skipped;
          }
        }
        index += entity.length;
        continue;
      }
      out.push(code, index);
      index += 1;
      continue;
    }
    const cp = input.codePointAt(index)!;
    const width = cp > 0xffff ? 2 : 1;
    if (cp >= 0xe0000 && cp <= 0xe007f) {
      invisible += 1;
      if (cp >= 0xe0020 && cp <= 0xe007e) {
        tagCharacters += 1;
        const ascii = cp - 0xe0000;
        out.add(ascii >= 0x41 && ascii <= 0x5a ? ascii + 32 : ascii, index);
      }
    } else if (isInvisible(cp)) {
      invisible += 1;
    } else {
      out.addText(normalizeCodePoint(cp), index);
    }
    if (width === 2) {
      // The low surrogate breaks both kinds of run.
      if (index + 1 - hexBreak > minHex) longHex = true;
      hexBreak = index + 1;
      if (index + 1 - base64Break > minBase64) base64.push(base64Break + 1, index + 1);
      base64Break = index + 1;
    }
    index += width;
  }
  if (length - hexBreak > minHex) longHex = true;
  if (length - base64Break > minBase64) base64.push(base64Break + 1, length);
  const size = out.size;
  const offsets = out.offsets;
  let text = unitsToString(out.units, size);
  offsets[size] = length;
  const mixedScript: Array<[number, number]> = [];
  if (options.foldHomoglyphs !== false && lookAlikeLetter.test(text)) {
    // Expand around each look-alike to its word (at most 64 letters each side), fold the word
    // when it also holds Latin letters or ASCII digits; every step moves forward, so this
    // stays linear.
    lookAlikeGlobal.lastIndex = 0;
    let folded = "";
    let copied = 0;
    for (let match = lookAlikeGlobal.exec(text); match; match = lookAlikeGlobal.exec(text)) {
      let start = match.index;
      let end = match.index + 1;
      while (start > copied && match.index - start < 64 && isWordUnit(text.charCodeAt(start - 1)))
        start -= 1;
      while (end < text.length && end - match.index < 64 && isWordUnit(text.charCodeAt(end)))
        end += 1;
      lookAlikeGlobal.lastIndex = end;
      const word = text.slice(start, end);
      // A look-alike beside Latin letters or ASCII digits is a disguise ("раypal", "о00.example"):
      // a word of the other script alone is left as it is.
      if (!latinLetter.test(word) && !asciiDigit.test(word)) continue;
      let replaced = "";
      for (let k = 0; k < word.length; k++) replaced += homoglyphs[word[k]!] ?? word[k];
      // Every entry of the table is one UTF-16 unit to one, so offsets stay valid.
      folded += text.slice(copied, start) + replaced;
      copied = end;
      mixedScript.push([start, end]);
    }
    if (copied > 0) text = folded + text.slice(copied);
  }
  return {
    normalized: {
      text,
      offsets: offsets.subarray(0, size + 1),
      invisible,
      tagCharacters,
      entities,
      mixedScript,
    },
    runs: { base64, longHex },
  };
}

/** A view derived from a normalised text, with offsets still pointing into the original. */
export interface TextView {
  text: string;
  offsets: Int32Array;
}

const tagPattern = /<!--|-->|<\/?[a-z][a-z0-9:_-]{0,40}(?:\s[^<>]{0,400})?\/?>/y;
const markupAscii = new Uint8Array(128);
for (const ch of '*_~`#|<>"\\=^[](){}') markupAscii[ch.charCodeAt(0)] = 1;

/**
 * Strips markup from a normalised text for phrase matching: HTML tags and comment markers,
 * Markdown emphasis, brackets and quotes become spaces, whitespace collapses again. Offsets keep
 * pointing into the original text. Linear time.
 */
export function phraseView(normalized: TextView): TextView {
  const bytes = readPhraseAscii(normalized.text);
  return (bytes !== undefined && phraseViewOfBytes(normalized, bytes)) || phraseViewOf(normalized);
}

const readPhraseAscii = createAsciiReader();
const readPhraseUnits = createUnitReader();
const ordinary = 0;
const markup = 1;
const tagStart = 2;
const hyphen = 3;
const space = 4;
const control = 5;
const phraseClass = new Uint8Array(128);
for (let code = 0; code < 32; code++) phraseClass[code] = control;
for (let code = 0; code < 128; code++) if (markupAscii[code] === 1) phraseClass[code] = markup;
phraseClass[0x3c] = tagStart;
phraseClass[0x2d] = hyphen;
phraseClass[32] = space;
phraseClass[10] = space;

/**
 * The phrase view of ASCII text whose whitespace is already collapsed (what `normalizeText`
 * gives): runs between markup are copied whole, and only the gaps around markup are rebuilt.
 * `undefined` when the text breaks that assumption, for the general loop to handle.
 */
function phraseViewOfBytes(normalized: TextView, bytes: Uint8Array): TextView | undefined {
  const source = normalized.text;
  const from = normalized.offsets;
  const length = bytes.length;
  if (length > 0 && (phraseClass[bytes[0]!] === space || phraseClass[bytes[length - 1]!] === space))
    return undefined;
  const units = new Uint8Array(length + 1);
  const offsets = new Int32Array(length + 1);
  let size = 0;
  // The gap being built (markup and the whitespace around it): where it starts, and whether a
  // line break outside a tag is part of it.
  let gapStart = -1;
  let gapNewline = false;
  let k = 0;
  while (k < length) {
    // The run of ordinary characters and single spaces up to the next markup.
    let end = k;
    let previousSpace = false;
    for (; end < length; end++) {
      const kind = phraseClass[bytes[end]!]!;
      if (kind === ordinary) {
        previousSpace = false;
        continue;
      }
      if (kind === space) {
        if (previousSpace) return undefined;
        previousSpace = true;
        continue;
      }
      if (kind === hyphen) {
        previousSpace = false;
        if (bytes[end + 1] === 0x2d) break;
        continue;
      }
      if (kind === control) return undefined;
      break;
    }
    let runStart = k;
    if (gapStart >= 0) {
      // Whitespace after markup belongs to the gap.
      while (runStart < end && phraseClass[bytes[runStart]!] === space) {
        if (bytes[runStart] === 10) gapNewline = true;
        runStart++;
      }
    }
    let runEnd = end;
    let trailing = -1;
    if (end < length && runEnd > runStart && phraseClass[bytes[runEnd - 1]!] === space) {
      runEnd -= 1;
      trailing = runEnd;
    }
    if (runEnd > runStart) {
      if (gapStart >= 0 && size > 0) {
        units[size] = gapNewline ? 10 : 32;
        offsets[size] = from[gapStart]!;
        size += 1;
      }
      gapStart = -1;
      gapNewline = false;
      units.set(bytes.subarray(runStart, runEnd), size);
      offsets.set(from.subarray(runStart, runEnd), size);
      size += runEnd - runStart;
    }
    if (trailing >= 0) {
      gapStart = trailing;
      gapNewline = bytes[trailing] === 10;
    }
    if (end >= length) break;
    // Markup at `end`: a tag or comment marker is skipped whole, anything else one character.
    let skip = 1;
    const code = bytes[end]!;
    if (code === 0x3c || code === 0x2d) {
      tagPattern.lastIndex = end;
      const match = tagPattern.exec(source);
      if (match) skip = match[0].length;
      else if (code === 0x2d) {
        // "--" that is not "-->": the hyphen is ordinary text.
        if (gapStart >= 0 && size > 0) {
          units[size] = gapNewline ? 10 : 32;
          offsets[size] = from[gapStart]!;
          size += 1;
        }
        gapStart = -1;
        gapNewline = false;
        units[size] = 0x2d;
        offsets[size] = from[end]!;
        size += 1;
        k = end + 1;
        continue;
      }
    }
    if (gapStart < 0) gapStart = end;
    k = end + skip;
  }
  offsets[size] = from[length]!;
  return {
    text: Buffer.from(units.buffer, units.byteOffset, size).toString("latin1"),
    offsets: offsets.subarray(0, size + 1),
  };
}

/** The phrase view of any text, one character at a time. @internal */
export function phraseViewOf(normalized: TextView): TextView {
  const source = normalized.text;
  const from = normalized.offsets;
  const length = source.length;
  const units = new Uint16Array(length + 1);
  const offsets = new Int32Array(length + 1);
  const codes = readPhraseUnits(source);
  let size = 0;
  let pendingSpace = -1;
  let pendingNewline = false;
  for (let k = 0; k < length; ) {
    const code = codes[k]!;
    let skip = 0;
    if (code === 0x3c || (code === 0x2d && k + 1 < length && codes[k + 1] === 0x2d)) {
      tagPattern.lastIndex = k;
      const match = tagPattern.exec(source);
      if (match) skip = match[0].length;
      else if (code === 0x3c) skip = 1;
    } else if (
      code < 0x80
        ? markupAscii[code] === 1
        : code === 0xab || code === 0xbb || code === 0x201c || code === 0x201d
    ) {
      skip = 1;
    }
    if (skip > 0 || code === 32 || code === 10) {
      if (pendingSpace < 0) pendingSpace = k;
      if (code === 10) pendingNewline = true;
      k += skip > 0 ? skip : 1;
      continue;
    }
    if (pendingSpace >= 0) {
      if (size > 0) {
        units[size] = pendingNewline ? 10 : 32;
        offsets[size] = from[pendingSpace]!;
        size += 1;
      }
      pendingSpace = -1;
      pendingNewline = false;
    }
    units[size] = code;
    offsets[size] = from[k]!;
    size += 1;
    k += 1;
  }
  offsets[size] = from[length]!;
  return { text: unitsToString(units, size), offsets: offsets.subarray(0, size + 1) };
}
