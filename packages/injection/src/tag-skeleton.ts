/**
 * The skeleton view the envelope uses to find look-alikes of its own tags: escapes decoded
 * (percent forms, repeatedly, so `%253C` is `<`; HTML character references; `\u003c` and
 * `\x3c`), control, format and combining characters dropped, then each character folded by NFKC
 * and by Unicode's confusables data (UTS #39, through the `unhomoglyph` package's copy of
 * confusables.txt) and lower-cased, keeping only letters, digits and `<`, `/`, `>`. Every view
 * character keeps the offset of the original character it came from.
 */
import confusablesData from "unhomoglyph/data.json" with { type: "json" };

let confusables: Map<string, string> | undefined;

/** The confusables mapping (code point -> prototype), loaded once. */
function confusableMap(): Map<string, string> {
  if (confusables) return confusables;
  confusables = new Map(Object.entries(confusablesData as Record<string, string>));
  // Brackets that look like angle brackets but are not in confusables.txt as such.
  for (const bracket of ["〈", "⟨", "《", "«", "〔", "❬", "⦑", "⧼", "﹤", "＜"])
    confusables.set(bracket, "<");
  for (const bracket of ["〉", "⟩", "》", "»", "〕", "❭", "⦒", "⧽", "﹥", "＞"])
    confusables.set(bracket, ">");
  return confusables;
}

interface View {
  text: string;
  offsets: number[];
}

const escapes =
  /%([0-9a-f]{2})|&#x0*([0-9a-f]{1,6});?|&#0*([0-9]{1,7});?|&(lt|gt|sol|amp|quot|apos|nbsp);?|\\u\{?([0-9a-f]{4,6})\}?|\\x([0-9a-f]{2})/gi;
const named: Record<string, string> = {
  lt: "<",
  gt: ">",
  sol: "/",
  amp: "&",
  quot: '"',
  apos: "'",
  nbsp: " ",
};

/** One round of escape decoding, with offsets carried through; `undefined` when nothing changed. */
function decodeRound(view: View): View | undefined {
  escapes.lastIndex = 0;
  if (!escapes.test(view.text)) return undefined;
  escapes.lastIndex = 0;
  let text = "";
  const offsets: number[] = [];
  let copied = 0;
  for (let match = escapes.exec(view.text); match; match = escapes.exec(view.text)) {
    const [whole, percent, hex, decimal, name, unicode, byte] = match;
    let code: number | undefined;
    if (percent ?? byte) code = Number.parseInt((percent ?? byte)!, 16);
    else if (hex ?? unicode) code = Number.parseInt((hex ?? unicode)!, 16);
    else if (decimal) code = Number.parseInt(decimal, 10);
    const decoded = name
      ? named[name.toLowerCase()]
      : code !== undefined && code <= 0x10ffff
        ? String.fromCodePoint(code)
        : undefined;
    if (decoded === undefined) continue;
    for (let index = copied; index < match.index; index++) {
      text += view.text[index];
      offsets.push(view.offsets[index]!);
    }
    text += decoded;
    for (let index = 0; index < decoded.length; index++) offsets.push(view.offsets[match.index]!);
    copied = match.index + whole.length;
  }
  for (let index = copied; index < view.text.length; index++) {
    text += view.text[index];
    offsets.push(view.offsets[index]!);
  }
  offsets.push(view.offsets[view.text.length]!);
  return { text, offsets };
}

const dropped = /[\p{Cc}\p{Cf}\p{M}\p{Zl}\p{Zp}]/u;
const kept = /[\p{L}\p{N}</>]/u;

/**
 * The skeleton view of text (see the module comment). Linear: at most four decoding rounds,
 * then one pass over code points.
 */
export function skeletonView(text: string): View {
  let view: View = { text, offsets: Array.from({ length: text.length + 1 }, (_, index) => index) };
  for (let round = 0; round < 4; round++) {
    const next = decodeRound(view);
    if (!next) break;
    view = next;
  }
  const ascii = asciiTable();
  let out = "";
  const offsets: number[] = [];
  const source = view.text;
  for (let index = 0; index < source.length; ) {
    const at = view.offsets[index]!;
    const code = source.charCodeAt(index);
    if (code < 0x80) {
      // ASCII: one table lookup (the same folding as below, precomputed).
      const folded = ascii[code]!;
      // One offset per unit: some ASCII letters fold to two (`m` is `rn` in confusables).
      for (let k = 0; k < folded.length; k++) offsets.push(at);
      out += folded;
      index++;
      continue;
    }
    const character = String.fromCodePoint(source.codePointAt(index)!);
    index += character.length;
    const folded = foldCharacter(character);
    for (let k = 0; k < folded.length; k++) offsets.push(at);
    out += folded;
  }
  offsets.push(view.offsets[view.text.length]!);
  return { text: out, offsets };
}

const foldCache = new Map<string, string>();

/** One character's skeleton: dropped, or NFKC + confusable prototype, lower case, kept units only. */
function foldCharacter(character: string): string {
  const cached = foldCache.get(character);
  if (cached !== undefined) return cached;
  const folded = foldUncached(character);
  // A speed cache, not a limit: past 65,536 distinct characters it stops growing.
  if (foldCache.size < 65_536) foldCache.set(character, folded);
  return folded;
}

function foldUncached(character: string): string {
  if (dropped.test(character)) return "";
  const map = confusableMap();
  let out = "";
  for (const folded of character.normalize("NFKC")) {
    const prototype = (map.get(folded) ?? folded).normalize("NFKC").toLowerCase();
    for (const unit of prototype) if (kept.test(unit)) out += unit;
  }
  return out;
}

let asciiFolds: string[] | undefined;

/** The skeleton of each ASCII character, computed once through the general path. */
function asciiTable(): string[] {
  if (!asciiFolds)
    asciiFolds = Array.from({ length: 128 }, (_, code) => foldCharacter(String.fromCharCode(code)));
  return asciiFolds;
}

/** The skeleton of a tag name: its letters and digits, folded the same way. */
export function skeletonName(name: string): string {
  return skeletonView(name).text.replace(/[</>]/g, "");
}

const patterns = new Map<string, RegExp>();

/** The compiled pattern of a set of tag names (compiled once per set). */
function patternFor(names: readonly string[]): RegExp {
  const key = names.join("\u0000");
  let pattern = patterns.get(key);
  if (!pattern) {
    const alternatives = names.map((name) => skeletonName(name)).join("|");
    pattern = new RegExp(`<\\/*(?:${alternatives})\\/*>?|(?:${alternatives})\\/*>`, "g");
    patterns.set(key, pattern);
  }
  return pattern;
}

/**
 * Spans (original offsets, merged, in order) of every tag-like form of the given names in text:
 * `<` or `</` then the name, or the name then `>`, in the skeleton view.
 */
export function findTagLike(text: string, names: readonly string[]): Array<[number, number]> {
  // Every match needs a `<` or `>` in the skeleton, which only these ASCII characters (or any
  // character outside ASCII, through escapes' results, NFKC or confusables) can give.
  if (!/[<>%&\\\u0080-\uffff]/.test(text)) return [];
  const view = skeletonView(text);
  const pattern = patternFor(names);
  pattern.lastIndex = 0;
  const spans: Array<[number, number]> = [];
  for (let match = pattern.exec(view.text); match; match = pattern.exec(view.text)) {
    const start = view.offsets[match.index]!;
    const lastOriginal = view.offsets[match.index + match[0].length - 1]!;
    // End after the whole original character (or escape) the last view character came from.
    let end = lastOriginal + 1;
    const after = view.offsets[match.index + match[0].length]!;
    if (after > end) end = Math.min(after, nextBoundary(text, lastOriginal));
    const last = spans[spans.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else spans.push([start, end]);
  }
  return spans;
}

/** The end of the escape or character that starts at `offset` in the original text. */
function nextBoundary(text: string, offset: number): number {
  escapes.lastIndex = offset;
  const sticky = new RegExp(escapes.source, "giy");
  sticky.lastIndex = offset;
  const match = sticky.exec(text);
  if (match) return offset + match[0].length;
  const code = text.codePointAt(offset) ?? 0;
  return offset + (code > 0xffff ? 2 : 1);
}
