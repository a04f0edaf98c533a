/**
 * How policy conditions compare argument values: the way the taint gate reduces text before it
 * compares, so a value cannot slip past a list by case, spacing, compatibility forms or
 * invisible characters.
 */

import { latinLookAlikes } from "@loopguard/core/plugin";

// Zero-width characters, joiners, bidi controls, BOM, soft hyphen, variation selectors,
// interlinear annotation marks: nothing a reader sees, so nothing a list should tell apart.
const invisible =
  /[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]|\u034f|\ufe00|\ufe01|\ufe02|\ufe03|\ufe04|\ufe05|\ufe06|\ufe07|\ufe08|\ufe09|\ufe0a|\ufe0b|\ufe0c|\ufe0d|\ufe0e|\ufe0f|\udb40[\udd00-\uddef]/g;
// Latin combining accents only: other scripts' marks carry meaning.
const latinAccents = /[\u0300-\u036f]/g;
const spaces = /[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;
const plainAscii = /^[\x21-\x7e]*$/;
const spacedAscii = /^[\x20-\x7e]*$/;

/**
 * The comparison form of a string: NFKC (full-width and other compatibility forms folded), no
 * invisible characters, Latin accents removed, lower case, whitespace collapsed to one space
 * and trimmed. `"ＥＮＴＥＲＰＲＩＳＥ "`, `"Enterprise"` and `"enter\u200bprise"` all give
 * `"enterprise"`.
 */
export function normalizeValue(text: string): string {
  // Most values are short printable ASCII without spaces: only case can differ.
  if (plainAscii.test(text)) return text.toLowerCase();
  // Printable ASCII with spaces: NFKC changes nothing there, so only case and spacing.
  if (spacedAscii.test(text)) return text.toLowerCase().replace(/ {2,}/g, " ").trim();
  // Lower-casing can produce new marks or compatibility forms (rarely, and only outside
  // ASCII: "İ" gives "i" and a combining dot): fold once more then.
  const lower = foldText(text).toLowerCase();
  return nonAscii.test(lower) ? foldText(lower) : lower;
}

/**
 * `normalizeValue` without the lower-casing: for regular expressions, which decide case
 * themselves with the `i` flag.
 */
export function foldText(text: string): string {
  if (plainAscii.test(text)) return text;
  const compatible = text.normalize("NFKC").replace(invisible, "");
  // Full-width and other forms that NFKC makes ASCII need no accent pass.
  const unaccented = nonAscii.test(compatible)
    ? compatible.normalize("NFD").replace(latinAccents, "").normalize("NFC")
    : compatible;
  return unaccented.replace(spaces, " ").trim();
}

/**
 * Cyrillic and Greek letters that look like Latin ones: core's table, the one the taint gate
 * (`@loopguard/injection`, normalize-text) folds with, folded only inside words that also hold
 * Latin letters, so Russian or Greek text keeps its meaning.
 */
const homoglyphs = latinLookAlikes;
const lookAlike = new RegExp(`[${Object.keys(homoglyphs).join("")}]`, "i");
const words = /[\p{L}\p{N}]+/gu;
const latinLetter = /[a-z]/i;
const nonAscii = /[^\x00-\x7f]/;

/**
 * Folds Cyrillic and Greek look-alikes to the Latin letters they imitate, inside words that
 * also hold Latin letters (`"еnterprise"` with a Cyrillic `е` gives `"enterprise"`); other text
 * is returned as it is. Case is kept (`"Е"` folds to `"E"`).
 */
export function foldLookAlikes(text: string): string {
  if (!nonAscii.test(text) || !lookAlike.test(text)) return text;
  return text.replace(words, (word) => {
    if (!latinLetter.test(word) || !lookAlike.test(word)) return word;
    let out = "";
    for (const char of word) {
      const lower = char.toLowerCase();
      const latin = homoglyphs[lower];
      out += latin === undefined ? char : lower === char ? latin : latin.toUpperCase();
    }
    return out;
  });
}

const decimal = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/;

/**
 * The keys a scalar compares under: strings by their normalised text (and, when the text is a
 * plain decimal number, by that number too); numbers by value (and by their text); booleans
 * and null by themselves. Two scalars are equal for a policy list when they share a key, so
 * `500`, `"500"` and `" 500.0 "` are the same entry, and so are `"EUR"` and `"eur "`.
 */
export function scalarKeys(value: string | number | boolean | null): string[] {
  if (value === null) return ["z"];
  if (typeof value === "boolean") return [value ? "b:1" : "b:0"];
  if (typeof value === "number") {
    // -0 and 0 are one number.
    const number = value === 0 ? 0 : value;
    return [`n:${number}`, `s:${String(number)}`];
  }
  const text = normalizeValue(value);
  const keys = [`s:${text}`];
  if (decimal.test(text)) {
    const number = Number(text);
    if (Number.isFinite(number)) keys.push(`n:${number === 0 ? 0 : number}`);
  }
  return keys;
}

/**
 * Whether a scalar is in a set of `scalarKeys`: the same answer as testing each of its keys,
 * without building them (a string is normalised once and looked up as text, then as a number).
 */
export function hasScalar(
  keys: ReadonlySet<string>,
  value: string | number | boolean | null,
): boolean {
  if (typeof value !== "string") {
    for (const key of scalarKeys(value)) if (keys.has(key)) return true;
    return false;
  }
  const text = normalizeValue(value);
  if (keys.has(`s:${text}`)) return true;
  if (!decimal.test(text)) return false;
  const number = Number(text);
  return Number.isFinite(number) && keys.has(`n:${number === 0 ? 0 : number}`);
}
