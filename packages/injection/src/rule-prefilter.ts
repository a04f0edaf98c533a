/**
 * The prefilter of the heuristic scanner: one pass over the normalised text finds which rule
 * anchors occur (word prefixes at word starts, characters, scripts, substrings), so that a rule
 * none of whose anchors occurs is not run at all. Most tool output holds none of the words an
 * injection needs, so most rules are skipped at the cost of one table lookup per word.
 */

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
const base = 37;

function scriptOf(code: number): number {
  if (code >= 0x400 && code <= 0x52f) return 1;
  if ((code >= 0x3040 && code <= 0x30ff) || (code >= 0x3400 && code <= 0x9fff)) return 2;
  if (code >= 0xf900 && code <= 0xfaff) return 2;
  if ((code >= 0xac00 && code <= 0xd7af) || (code >= 0x1100 && code <= 0x11ff)) return 4;
  if (code >= 0x600 && code <= 0x6ff) return 8;
  return 0;
}

/** A compiled prefilter over a list of rules' anchors. @internal */
export interface RulePrefilter {
  /**
   * Which rules may match `text` (normalised): `result[i]` is 1 when rule `i` has no anchors or
   * all of its anchors occur. The array is reused by the next call.
   */
  active(text: string): Uint8Array;
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
): RulePrefilter {
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
  // Word prefixes by the key of their first two (table2) or three (table3) characters; each
  // slot points at a run of entries in flat arrays, so a word start costs a few typed-array reads.
  const slots2 = new Map<number, [string, number[]][]>();
  const slots3 = new Map<number, [string, number[]][]>();
  for (const [word, groups] of wordGroups) {
    const key2 = wordCode[word.charCodeAt(0)]! * base + wordCode[word.charCodeAt(1)]!;
    const slots = word.length === 2 ? slots2 : slots3;
    const key = word.length === 2 ? key2 : key2 * base + wordCode[word.charCodeAt(2)]!;
    slots.set(key, [...(slots.get(key) ?? []), [word, groups]]);
  }
  const table2 = new Int32Array(base * base).fill(-1);
  const table3 = new Int32Array(base * base * base).fill(-1);
  const entryWords: string[] = [];
  const entryGroupStart: number[] = [];
  const flatGroups: number[] = [];
  const slotStart: number[] = [];
  for (const [slots, table] of [
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
  slotStart.push(entryWords.length);
  entryGroupStart.push(flatGroups.length);
  const slotStarts = Int32Array.from(slotStart);
  const groupStarts = Int32Array.from(entryGroupStart);
  const groupsFlat = Int32Array.from(flatGroups);
  const charIndex = new Int32Array(128).fill(-1);
  const charList: number[][] = [];
  for (const [code, groups] of charGroups) {
    charIndex[code] = charList.length;
    charList.push(groups);
  }

  const hit = new Uint8Array(groupCount);
  const result = new Uint8Array(anchorsOfRules.length);
  const seenChar = new Uint8Array(128);

  /** Marks the groups of the entries of a slot whose word starts `text` at `index`. */
  const mark = (text: string, index: number, slot: number) => {
    for (let entry = slotStarts[slot]!; entry < slotStarts[slot + 1]!; entry++) {
      const word = entryWords[entry]!;
      let matches = true;
      for (let offset = 3; offset < word.length; offset++) {
        if (text.charCodeAt(index + offset) !== word.charCodeAt(offset)) {
          matches = false;
          break;
        }
      }
      if (!matches) continue;
      for (let at = groupStarts[entry]!; at < groupStarts[entry + 1]!; at++)
        hit[groupsFlat[at]!] = 1;
    }
  };

  return {
    active(text: string): Uint8Array {
      hit.fill(0);
      seenChar.fill(0);
      let scripts = 0;
      let inWord = false;
      const length = text.length;
      for (let index = 0; index < length; index++) {
        const code = text.charCodeAt(index);
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
        const nextCode = text.charCodeAt(index + 1);
        const second = nextCode < 128 ? wordCode[nextCode]! : 0;
        if (second === 0) continue;
        const key2 = first * base + second;
        const slot2 = table2[key2]!;
        if (slot2 >= 0) mark(text, index, slot2);
        const thirdCode = text.charCodeAt(index + 2);
        const third = thirdCode < 128 ? wordCode[thirdCode]! : 0;
        if (third === 0) continue;
        const slot3 = table3[key2 * base + third]!;
        if (slot3 >= 0) mark(text, index, slot3);
      }
      for (let code = 0; code < 128; code++) {
        if (seenChar[code] === 0) continue;
        const at = charIndex[code]!;
        if (at >= 0) for (const group of charList[at]!) hit[group] = 1;
      }
      for (let rule = 0; rule < ruleGroups.length; rule++) {
        const groups = ruleGroups[rule]!;
        let all = 1;
        for (let index = 0; index < groups.length; index++) {
          const group = groups[index]!;
          if (hit[group] === 1) continue;
          if (
            (groupScripts[group]! & scripts) === 0 &&
            !includesAny(text, groupSubstrings[group]!)
          ) {
            all = 0;
            break;
          }
          hit[group] = 1;
        }
        result[rule] = all;
      }
      return result;
    },
  };
}

function includesAny(text: string, substrings: readonly string[]): boolean {
  for (let index = 0; index < substrings.length; index++)
    if (text.includes(substrings[index]!)) return true;
  return false;
}
