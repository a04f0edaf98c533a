import { createRequire } from "node:module";

let confusables: Record<string, string> | undefined;

/** Unicode's confusables mapping (UTS #39 `confusables.txt`, via the `unhomoglyph` package's copy), loaded once. */
function confusableMap(): Record<string, string> {
  if (confusables) return confusables;
  const require = createRequire(import.meta.url);
  confusables = require("unhomoglyph/data.json") as Record<string, string>;
  return confusables;
}

/**
 * The UTS #39 skeleton of a name: NFD, each character replaced by its prototype from
 * Unicode's confusables data, NFD again. Two names with the same skeleton look alike
 * (`send_emаil` with a Cyrillic а and `send_email`; `rn` and `m`). The skeleton is for
 * comparing, never for showing.
 *
 * @example
 * nameSkeleton("send_em\u0430il") === nameSkeleton("send_email"); // true
 */
export function nameSkeleton(name: string): string {
  const map = confusableMap();
  let out = "";
  for (const character of name.normalize("NFD")) out += map[character] ?? character;
  return out.normalize("NFD");
}

/**
 * The keys under which two names count as confusable: the skeleton of the NFKC form, and the
 * skeleton of its lower-case form, lower-cased again (so `SEND_EMAIL` meets `send_email`,
 * `c0de` meets `code`, and `EMAIL` with a Latin I meets `EMAlL`). Two different names sharing either key are confusable. In the
 * lower-case key, `i` and `l` are one letter: Unicode's table sends `I`, `1` and `|` to `l` but
 * `ı`, `і`, `ⅰ` and the Cyrillic palochka `ӏ` (a bare stroke, as `l` looks) to `i`.
 */
export function confusableKeys(name: string): [string, string] {
  const canonical = name.normalize("NFKC");
  // Lower-cased again after the skeleton: its prototypes may be capitals (`0` becomes `O`).
  const folded = nameSkeleton(nameSkeleton(canonical.toLowerCase()).toLowerCase());
  return [nameSkeleton(canonical), folded.replaceAll("i", "l")];
}

/**
 * Characters a reader cannot see or that change how a name reads: controls, format
 * characters (zero-width space and joiners, bidi overrides, the BOM), separators and other
 * white space, default-ignorable code points, private-use and unpaired surrogates.
 */
const invisible =
  /[\p{Cc}\p{Cf}\p{Z}\p{Co}\p{Cs}\p{Default_Ignorable_Code_Point}\p{Variation_Selector}\p{Mn}\p{Me}\u2800]/u;

/**
 * What is wrong with a name as a name (before comparing it with others): `undefined` when it
 * is fine, else why it is refused (an invisible character, with its code point; a name that
 * NFKC changes, such as full-width letters or ligatures; an empty or overlong name).
 */
export function nameProblem(name: unknown, maxLength = 256): string | undefined {
  if (typeof name !== "string" || name.length === 0) return "it is not a non-empty string";
  if (name.length > maxLength) return `it is longer than ${maxLength} characters`;
  const hidden = invisible.exec(name);
  if (hidden)
    return `it holds an invisible, combining or control character (U+${hidden[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")} at index ${hidden.index})`;
  const canonical = name.normalize("NFKC");
  if (canonical !== name)
    return `it is not in canonical form (NFKC makes it ${JSON.stringify(canonical)})`;
  return undefined;
}
