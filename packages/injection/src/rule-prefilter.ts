/**
 * The prefilter of the heuristic scanner: one pass over the normalised text finds which rule
 * anchors occur (word prefixes at word starts, characters, scripts, substrings), so that a rule
 * none of whose anchors occurs is not run at all. Most tool output holds none of the words an
 * injection needs, so most rules are skipped at the cost of one table lookup per word.
 */

import { createAsciiReader, createUnitReader } from "./ascii-bytes.js";
import {
  base64Class,
  type EncodedRuns,
  encodedClasses,
  hexClass,
  minBase64,
  minHex,
} from "./decode-segments.js";

/** Scripts an anchor can require (for rules written in non-Latin scripts). */
export type AnchorScript = "cyrillic" | "cjk" | "hangul" | "arabic";

/**
 * One condition a match of a rule always satisfies: at least one of its members occurs in the
 * normalised text. A rule's anchors are a list of such conditions, all of which must hold.
 */
export interface RuleAnchor {
  /**
   * Lower-case word prefixes of at least two letters or digits (`"ignor"` for ignore, ignored,
   * ignoring): one of them starts a word of every match. A word starts at an ASCII letter or
   * digit that does not follow one, so a prefix preceded by `\b`, a space or punctuation in the
   * pattern qualifies; one that may follow a letter (`"allprevious"`) does not.
   */
  readonly words?: readonly string[];
  /** Characters, one of which occurs in every match. */
  readonly chars?: string;
  /** Scripts, a character of one of which occurs in every match. */
  readonly scripts?: readonly AnchorScript[];
  /** Substrings, one of which occurs anywhere in every match (checked with `includes`). */
  readonly substrings?: readonly string[];
}

const scriptBits: Record<AnchorScript, number> = { cyrillic: 1, cjk: 2, hangul: 4, arabic: 8 };

/** 0 for characters outside words, 1..36 for a-z and 0-9 (the alphabet of the key tables). */
const wordCode = new Uint8Array(128);
for (let code = 97; code <= 122; code++) wordCode[code] = code - 96;
for (let code = 48; code <= 57; code++) wordCode[code] = code - 48 + 27;
/** `wordCode` that also reads capitals as their lower case. */
const foldedCode = wordCode.slice();
for (let code = 65; code <= 90; code++) foldedCode[code] = code - 64;
const base = 37;

function scriptOf(code: number): number {
  if (code >= 0x400 && code <= 0x52f) return 1;
  if ((code >= 0x3040 && code <= 0x30ff) || (code >= 0x3400 && code <= 0x9fff)) return 2;
  if (code >= 0xf900 && code <= 0xfaff) return 2;
  if ((code >= 0xac00 && code <= 0xd7af) || (code >= 0x1100 && code <= 0x11ff)) return 4;
  if (code >= 0x600 && code <= 0x6ff) return 8;
  return 0;
}

/** What one pass over ASCII text finds. @internal */
export interface AsciiProfile {
  /**
   * How the text normalises: `"plain"`, lower case only; `"simple"`, lower case and collapsed
   * whitespace (no `&`, so no entity); `"entities"`, anything else. For the first two, the
   * words and characters found are those of the normalised text, and `decideProfile` gives
   * the active rules.
   */
  kind: "plain" | "simple" | "entities";
  /** The candidates of `findEncodedSegments`. */
  runs: EncodedRuns;
}

/** A compiled prefilter over a list of rules' anchors. @internal */
export interface RulePrefilter {
  /**
   * For ASCII text, one loop that does the work of three: how it normalises, its anchors, and
   * the encoded-run candidates; `undefined` for other text.
   */
  profile(text: string): AsciiProfile | undefined;
  /**
   * The rules that may match, from the anchors the last `profile` call found, given the
   * normalised text (for substring anchors). Only for a profile of kind "plain" or "simple".
   */
  decideProfile(normalizedText: string): Uint8Array;
  /**
   * Where the start words of rule `rule` begin, found by the last `profile` (offsets in that
   * text) or `active` call (offsets in the text it was given), in increasing order, possibly
   * repeated, in the first `startCount(rule)` entries; `undefined` for a rule without start
   * words.
   */
  startPositions(rule: number): Int32Array | undefined;
  /** How many of `startPositions(rule)` are set (the array is reused and may be longer). */
  startCount(rule: number): number;
  /**
   * Which rules may match `text` (normalised): `result[i]` is 1 when rule `i` has no anchors or
   * all of its anchors occur. The array is reused by the next call.
   */
  active(text: string): Uint8Array;
}

/** The lookup tables of a prefilter, read by the loops below. */
interface Tables {
  /** Slot of the anchors of exactly two characters, by the key of the first two. */
  readonly table2: Int32Array;
  /** Slot of the longer anchors, by the key of the first three. */
  readonly table3: Int16Array;
  /** Whether a two-character key begins a longer anchor. */
  readonly has3: Uint8Array;
  /** Entries of slot `s`: `slotStarts[s]` to `slotStarts[s + 1]`. */
  readonly slotStarts: Int32Array;
  /** Bytes of entry `e`: `wordBytes[entryStarts[e]]` to `wordBytes[entryStarts[e + 1]]`. */
  readonly entryStarts: Int32Array;
  readonly wordBytes: Uint8Array;
  /** Groups of entry `e`: `groupsFlat[groupStarts[e]]` to `groupsFlat[groupStarts[e + 1]]`. */
  readonly groupStarts: Int32Array;
  readonly groupsFlat: Int32Array;
  /** Per group: whether one of its members was found. */
  readonly hit: Uint8Array;
  /** Per ASCII character outside words: whether it occurs. */
  readonly seenChar: Uint8Array;
  /** Slot of the anchors of one character, by its key. */
  readonly table1: Int32Array;
  /** Per group: whether it is a start group (its word positions are kept). */
  readonly isStart: Uint8Array;
  /** Per start group: where its words start, in the order found (`counts` of them). */
  readonly positions: Int32Array[];
  readonly counts: Int32Array;
}

/**
 * Marks the groups of the entries of `slot` whose word starts at `index` (the first three
 * characters already match). `fold` is 0x20 when the bytes are not lower-cased yet: `| 0x20`
 * lower-cases a letter and keeps a digit.
 *
 * Deliberately the same steps as `markString` (the string path, below): this is the byte path,
 * for ASCII text read into a Uint8Array, and each loop reads its own kind of input directly (a
 * shared helper taking a reader callback per character costs a call per compared character in
 * the scanner's hottest loop). A change to one must be made to the other; what a match marks
 * is `markGroups`, shared.
 */
function markAt(tables: Tables, bytes: Uint8Array, index: number, slot: number, fold: number) {
  const { slotStarts, entryStarts, wordBytes } = tables;
  for (let entry = slotStarts[slot]!; entry < slotStarts[slot + 1]!; entry++) {
    const start = entryStarts[entry]!;
    const end = entryStarts[entry + 1]!;
    if (index + end - start > bytes.length) continue;
    let matches = true;
    for (let offset = 3; offset < end - start; offset++) {
      if ((bytes[index + offset]! | fold) !== wordBytes[start + offset]) {
        matches = false;
        break;
      }
    }
    if (matches) markGroups(tables, entry, index);
  }
}

/** Marks the groups of a matched entry, and keeps the position of a start group's word. */
function markGroups(tables: Tables, entry: number, index: number): void {
  const { groupStarts, groupsFlat, hit } = tables;
  for (let at = groupStarts[entry]!; at < groupStarts[entry + 1]!; at++) {
    const group = groupsFlat[at]!;
    hit[group] = 1;
    if (tables.isStart[group] === 1) addPosition(tables, group, index);
  }
}

/** Appends a start position to a group's list, growing it when full. */
function addPosition(tables: Tables, group: number, index: number): void {
  const count = tables.counts[group]!;
  let list = tables.positions[group]!;
  if (count === list.length) {
    const grown = new Int32Array(list.length * 2 + 8);
    grown.set(list);
    tables.positions[group] = list = grown;
  }
  list[count] = index;
  tables.counts[group] = count + 1;
}

/** Looks up the word that starts at `index` (codes from `codes`, folded or not). */
function wordAt(
  tables: Tables,
  bytes: Uint8Array,
  index: number,
  first: number,
  codes: Uint8Array,
  fold: number,
): void {
  const length = bytes.length;
  const slot1 = tables.table1[first]!;
  if (slot1 >= 0) markAt(tables, bytes, index, slot1, fold);
  if (index + 1 >= length) return;
  const second = codes[bytes[index + 1]!]!;
  if (second === 0) return;
  const key2 = first * base + second;
  const slot2 = tables.table2[key2]!;
  if (slot2 >= 0) markAt(tables, bytes, index, slot2, fold);
  if (tables.has3[key2] === 0 || index + 2 >= length) return;
  const third = codes[bytes[index + 2]!]!;
  if (third === 0) return;
  const slot3 = tables.table3[key2 * base + third]!;
  if (slot3 >= 0) markAt(tables, bytes, index, slot3, fold);
}

/** Classes of the profile loop: bits for words, spaces, other whitespace, "&", and the encoded runs. */
const wordBit = 4;
const spaceBit = 8;
const oddBit = 16;
const profileClass = new Uint8Array(128);
for (let code = 0; code < 128; code++) {
  let bits = encodedClasses[code]!;
  if (foldedCode[code] !== 0) bits |= wordBit;
  if (code === 32 || code === 10) bits |= spaceBit;
  else if (code < 32 || code === 0x7f || code === 0x26) bits |= oddBit;
  profileClass[code] = bits;
}

/**
 * The profile loop over ASCII bytes: anchors (on the lower case), encoded runs (pushed to
 * `base64`), and how the text normalises. Returns `kind | (longHex ? 4 : 0)` with kind 0
 * plain, 1 simple, 2 entities.
 */
function profileBytes(tables: Tables, bytes: Uint8Array, base64: number[]): number {
  const seenChar = tables.seenChar;
  const length = bytes.length;
  // The last character outside a base64 run and outside a hex run: a run is long enough when
  // the next such character is far enough.
  let base64Break = -1;
  let hexBreak = -1;
  let longHex = false;
  let plain = true;
  let ampersand = false;
  let previousSpace = true;
  let inWord = false;
  for (let index = 0; index < length; index++) {
    const code: number = bytes[index]!;
    const bits: number = profileClass[code]!;
    if ((bits & hexClass) === 0) {
      if (index - hexBreak > minHex) longHex = true;
      hexBreak = index;
    }
    if ((bits & base64Class) === 0) {
      if (index - base64Break > minBase64) base64.push(base64Break + 1, index);
      base64Break = index;
    }
    if ((bits & wordBit) !== 0) {
      previousSpace = false;
      if (inWord) continue;
      inWord = true;
      wordAt(tables, bytes, index, foldedCode[code]!, foldedCode, 0x20);
      continue;
    }
    inWord = false;
    seenChar[code] = 1;
    if ((bits & spaceBit) !== 0) {
      if (previousSpace) plain = false;
      previousSpace = true;
    } else {
      previousSpace = false;
      if ((bits & oddBit) !== 0) {
        plain = false;
        if (code === 0x26) ampersand = true;
      }
    }
  }
  if (length - hexBreak > minHex) longHex = true;
  if (length - base64Break > minBase64) base64.push(base64Break + 1, length);
  if (length > 0 && previousSpace) plain = false;
  return (plain ? 0 : ampersand ? 2 : 1) | (longHex ? 4 : 0);
}

/** The anchor loop over lower-cased ASCII bytes. */
function scanBytes(tables: Tables, bytes: Uint8Array): void {
  const seenChar = tables.seenChar;
  const length = bytes.length;
  let inWord = false;
  for (let index = 0; index < length; index++) {
    const code = bytes[index]!;
    const first = wordCode[code]!;
    if (first === 0) {
      seenChar[code] = 1;
      inWord = false;
      continue;
    }
    if (inWord) continue;
    inWord = true;
    wordAt(tables, bytes, index, first, wordCode, 0);
  }
}

/** Whether a word prefix is usable as an anchor. */
export function validAnchorWord(word: unknown): boolean {
  return typeof word === "string" && /^[a-z0-9]{2,40}$/.test(word);
}

/**
 * Compiles the anchors of rules (`undefined` for a rule that always runs) into a prefilter.
 *
 * @example
 * const prefilter = compilePrefilter([[{ words: ["ignor"] }], undefined]);
 * prefilter.active("please ignore it"); // Uint8Array [1, 1]
 */
export function compilePrefilter(
  anchorsOfRules: readonly (readonly RuleAnchor[] | undefined)[],
  startsOfRules: readonly (readonly string[] | undefined)[] = [],
): RulePrefilter {
  const groups = anchorGroups(anchorsOfRules, startsOfRules);
  const { ruleGroups, groupScripts, groupSubstrings, charGroups, wordGroups } = groups;
  const { startGroupOfRule, startGroups, groupCount } = groups;
  const words = wordTables(wordGroups);
  const { table1, table2, table3, has3, entryWords } = words;
  const charIndex = new Int32Array(128).fill(-1);
  const charList: number[][] = [];
  for (const [code, groups] of charGroups) {
    charIndex[code] = charList.length;
    charList.push(groups);
  }

  const hit = new Uint8Array(groupCount);
  const result = new Uint8Array(anchorsOfRules.length);
  const seenChar = new Uint8Array(128);
  const readAscii = createAsciiReader();
  const readUnits = createUnitReader();
  const tables: Tables = {
    ...words,
    hit,
    seenChar,
    isStart: new Uint8Array(groupCount),
    positions: Array.from({ length: groupCount }, () => new Int32Array(16)),
    counts: new Int32Array(groupCount),
  };
  for (const group of startGroups) tables.isStart[group] = 1;
  const resetPositions = () => {
    tables.counts.fill(0);
  };

  const mark = (text: string, index: number, slot: number) =>
    markString(tables, entryWords, text, index, slot);

  /** The loop over any text; returns the scripts seen. */
  const scanString = (text: string): number => {
    let scripts = 0;
    let inWord = false;
    const length = text.length;
    const source = readUnits(text);
    for (let index = 0; index < length; index++) {
      const code = source[index]!;
      if (code >= 128) {
        scripts |= scriptOf(code);
        inWord = false;
        continue;
      }
      const first = wordCode[code]!;
      if (first === 0) {
        seenChar[code] = 1;
        inWord = false;
        continue;
      }
      if (inWord) continue;
      inWord = true;
      const slot1 = table1[first]!;
      if (slot1 >= 0) mark(text, index, slot1);
      const nextCode = index + 1 < length ? source[index + 1]! : 0;
      const second = nextCode < 128 ? wordCode[nextCode]! : 0;
      if (second === 0) continue;
      const key2 = first * base + second;
      const slot2 = table2[key2]!;
      if (slot2 >= 0) mark(text, index, slot2);
      if (has3[key2] === 0) continue;
      const thirdCode = index + 2 < length ? source[index + 2]! : 0;
      const third = thirdCode < 128 ? wordCode[thirdCode]! : 0;
      if (third === 0) continue;
      const slot3 = table3[key2 * base + third]!;
      if (slot3 >= 0) mark(text, index, slot3);
    }
    return scripts;
  };

  /** Sets `result` from `hit`, `seenChar` and the scripts seen. */
  // The groups of each rule, flat: rule r has ruleGroupsFlat[ruleGroupStart[r]..ruleGroupStart[r + 1]].
  const ruleGroupStart = new Int32Array(ruleGroups.length + 1);
  ruleGroups.forEach((groups, rule) => {
    ruleGroupStart[rule + 1] = ruleGroupStart[rule]! + groups.length;
  });
  const ruleGroupsFlat = Int32Array.from(ruleGroups.flat());
  const scriptsOfGroup = Int32Array.from(groupScripts);
  const hasSubstrings = Uint8Array.from(groupSubstrings, (list) => (list.length > 0 ? 1 : 0));
  const anchorChars = [...charGroups.keys()];

  const decide = (text: string, scripts: number): Uint8Array => {
    for (const code of anchorChars) {
      if (seenChar[code] === 0) continue;
      for (const group of charList[charIndex[code]!]!) hit[group] = 1;
    }
    for (let rule = 0; rule < ruleGroups.length; rule++) {
      let all = 1;
      for (let at = ruleGroupStart[rule]!; at < ruleGroupStart[rule + 1]!; at++) {
        const group = ruleGroupsFlat[at]!;
        if (hit[group] === 1) continue;
        if (
          (scriptsOfGroup[group]! & scripts) === 0 &&
          (hasSubstrings[group] === 0 || !includesAny(text, groupSubstrings[group]!))
        ) {
          all = 0;
          break;
        }
        hit[group] = 1;
      }
      result[rule] = all;
    }
    return result;
  };

  return {
    profile(text: string): AsciiProfile | undefined {
      const bytes = readAscii(text);
      if (bytes === undefined) return undefined;
      hit.fill(0);
      resetPositions();
      seenChar.fill(0);
      const base64: number[] = [];
      const outcome = profileBytes(tables, bytes, base64);
      const kind = outcome & 3;
      return {
        kind: kind === 0 ? "plain" : kind === 1 ? "simple" : "entities",
        runs: { base64, longHex: (outcome & 4) !== 0 },
      };
    },
    startPositions(rule: number): Int32Array | undefined {
      const group = startGroupOfRule[rule] ?? -1;
      return group >= 0 ? tables.positions[group] : undefined;
    },
    startCount(rule: number): number {
      const group = startGroupOfRule[rule] ?? -1;
      return group >= 0 ? tables.counts[group]! : 0;
    },
    decideProfile(normalizedText: string): Uint8Array {
      // Whitespace is the only character normalisation changes here, and no anchor is one.
      return decide(normalizedText, 0);
    },
    active(text: string): Uint8Array {
      hit.fill(0);
      resetPositions();
      seenChar.fill(0);
      const bytes = readAscii(text);
      let scripts = 0;
      if (bytes === undefined) scripts = scanString(text);
      else scanBytes(tables, bytes);
      return decide(text, scripts);
    },
  };
}

function includesAny(text: string, substrings: readonly string[]): boolean {
  for (let index = 0; index < substrings.length; index++)
    if (text.includes(substrings[index]!)) return true;
  return false;
}

/**
 * Numbers the anchor groups of every rule (a rule is active when each of its groups is hit) and
 * the start groups (the words one of which begins every match of a rule), and indexes them by
 * word, by character outside words, by script and by substring.
 */
function anchorGroups(
  anchorsOfRules: readonly (readonly RuleAnchor[] | undefined)[],
  startsOfRules: readonly (readonly string[] | undefined)[],
) {
  const ruleGroups: number[][] = [];
  const groupScripts: number[] = [];
  const groupSubstrings: (readonly string[])[] = [];
  const charGroups = new Map<number, number[]>();
  const wordGroups = new Map<string, number[]>();
  let groupCount = 0;
  for (const anchors of anchorsOfRules) {
    const groups: number[] = [];
    for (const anchor of anchors ?? []) {
      const group = groupCount++;
      groups.push(group);
      for (const word of anchor.words ?? [])
        wordGroups.set(word, [...(wordGroups.get(word) ?? []), group]);
      const substrings = [...(anchor.substrings ?? [])];
      for (const char of anchor.chars ?? "") {
        const code = char.charCodeAt(0);
        // The pass below records only characters outside words; letters, digits and
        // non-ASCII characters are looked for as substrings.
        if (code < 128 && wordCode[code] === 0)
          charGroups.set(code, [...(charGroups.get(code) ?? []), group]);
        else substrings.push(char);
      }
      let scripts = 0;
      for (const script of anchor.scripts ?? []) scripts |= scriptBits[script];
      groupScripts.push(scripts);
      groupSubstrings.push(substrings);
    }
    ruleGroups.push(groups);
  }
  // Start groups: the words one of which begins every match of a rule; their positions are kept.
  const startGroupOfRule = new Int32Array(anchorsOfRules.length).fill(-1);
  const startGroups: number[] = [];
  startsOfRules.forEach((starts, rule) => {
    if (starts === undefined || rule >= anchorsOfRules.length) return;
    const group = groupCount++;
    startGroupOfRule[rule] = group;
    startGroups.push(group);
    groupScripts.push(0);
    groupSubstrings.push([]);
    for (const word of new Set(starts))
      wordGroups.set(word, [...(wordGroups.get(word) ?? []), group]);
  });
  return {
    ruleGroups,
    groupScripts,
    groupSubstrings,
    charGroups,
    wordGroups,
    startGroupOfRule,
    startGroups,
    groupCount,
  };
}

/**
 * The word-prefix tables: prefixes keyed by their first one, two or three characters, each slot
 * a run of entries in flat arrays, and the entry words as bytes.
 */
function wordTables(wordGroups: ReadonlyMap<string, number[]>) {
  // Word prefixes by the key of their first two (table2) or three (table3) characters; each
  // slot points at a run of entries in flat arrays, so a word start costs a few typed-array reads.
  const slots1 = new Map<number, [string, number[]][]>();
  const slots2 = new Map<number, [string, number[]][]>();
  const slots3 = new Map<number, [string, number[]][]>();
  for (const [word, groups] of wordGroups) {
    if (word.length === 1) {
      const key = wordCode[word.charCodeAt(0)]!;
      slots1.set(key, [...(slots1.get(key) ?? []), [word, groups]]);
      continue;
    }
    const key2 = wordCode[word.charCodeAt(0)]! * base + wordCode[word.charCodeAt(1)]!;
    const slots = word.length === 2 ? slots2 : slots3;
    const key = word.length === 2 ? key2 : key2 * base + wordCode[word.charCodeAt(2)]!;
    slots.set(key, [...(slots.get(key) ?? []), [word, groups]]);
  }
  const table1 = new Int32Array(base).fill(-1);
  const table2 = new Int32Array(base * base).fill(-1);
  // table3 is large (100 KB): it is read only for words whose first two characters begin a
  // longer anchor (has3, 1.4 KB, stays in the first-level cache).
  const table3 = new Int16Array(base * base * base).fill(-1);
  const has3 = new Uint8Array(base * base);
  const entryWords: string[] = [];
  const entryGroupStart: number[] = [];
  const flatGroups: number[] = [];
  const slotStart: number[] = [];
  for (const [slots, table] of [
    [slots1, table1],
    [slots2, table2],
    [slots3, table3],
  ] as const) {
    for (const [key, list] of slots) {
      table[key] = slotStart.length;
      slotStart.push(entryWords.length);
      for (const [word, groups] of list) {
        entryWords.push(word);
        entryGroupStart.push(flatGroups.length);
        flatGroups.push(...groups);
      }
    }
  }
  for (const key of slots3.keys()) has3[Math.floor(key / base)] = 1;
  slotStart.push(entryWords.length);
  entryGroupStart.push(flatGroups.length);
  const slotStarts = Int32Array.from(slotStart);
  const groupStarts = Int32Array.from(entryGroupStart);
  const groupsFlat = Int32Array.from(flatGroups);

  // Entry words as bytes, for the comparison of their fourth character onwards.
  const entryStarts = new Int32Array(entryWords.length + 1);
  const wordBytes = new Uint8Array(entryWords.reduce((sum, word) => sum + word.length, 0));
  entryWords.forEach((word, entry) => {
    const start = entryStarts[entry]!;
    for (let offset = 0; offset < word.length; offset++)
      wordBytes[start + offset] = word.charCodeAt(offset);
    entryStarts[entry + 1] = start + word.length;
  });
  return {
    table1,
    table2,
    table3,
    has3,
    entryWords,
    slotStarts,
    groupStarts,
    groupsFlat,
    entryStarts,
    wordBytes,
  };
}

/**
 * Marks the groups of the entries of a slot whose word starts `text` at `index`: the string
 * path, deliberately the same steps as `markAt` (the byte path; see there why they are two).
 */
function markString(
  tables: Tables,
  entryWords: readonly string[],
  text: string,
  index: number,
  slot: number,
): void {
  const { slotStarts } = tables;
  for (let entry = slotStarts[slot]!; entry < slotStarts[slot + 1]!; entry++) {
    const word = entryWords[entry]!;
    let matches = true;
    for (let offset = 3; offset < word.length; offset++) {
      if (text.charCodeAt(index + offset) !== word.charCodeAt(offset)) {
        matches = false;
        break;
      }
    }
    if (matches) markGroups(tables, entry, index);
  }
}
