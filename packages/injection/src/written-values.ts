/**
 * What the model has written into tool arguments, kept in a folded, loose form so that a value
 * it wrote cannot come back vouched for by a trusted tool that echoes it: in any case, width,
 * look-alike spelling, split across arguments (`{ user, domain }`, `{ cc, number }`) or spelled
 * out (`ledger at inbox-cloud dot example`, `jane(at)acme(dot)io`). Refusing folds; admitting
 * never does: this side errs towards "the model wrote it".
 */
import { normalizeText } from "./normalize-text.js";
import { decodePercent, leavesOf } from "./taint-values.js";

const spelled =
  /[\s([{<]+(?:at|dot|arobase|punkt|punto|point)[\s)\]}>]+|[([{<]\s*(?:at|dot)\s*[)\]}>]/gi;
const nonWord = /[^\p{L}\p{N}]/gu;

/** Letters and digits of text after NFKC, lower case and look-alike folding. */
export function foldedLoose(text: string): string {
  return normalizeText(text, { foldHomoglyphs: true }).text.replace(nonWord, "");
}

/** Pairs of leaves are joined in both orders up to this many leaves; beyond, only in order. */
const pairedLeaves = 16;

/**
 * The loose forms of one call's arguments as one searchable string: each leaf, each leaf with
 * spelled-out separators removed, all leaves joined in order, and every pair of leaves in both
 * orders (the first 16 leaves), each between `\u0001` marks; then the digits of all leaves.
 */
export function writtenForms(args: unknown): string {
  // Percent-escapes decoded too: a search tool that URL-decodes its query echoes the value
  // the model wrote as `ledger%40inbox-cloud.example`.
  const leaves = leavesOf(args).map((leaf) =>
    typeof leaf === "string" && leaf.includes("%") ? decodePercent(leaf) : String(leaf),
  );
  const plain = leaves.map(foldedLoose);
  const despelled = leaves.map((leaf) => foldedLoose(` ${leaf} `.replace(spelled, " ")));
  const forms = new Set<string>();
  for (let index = 0; index < leaves.length; index++) {
    forms.add(plain[index]!);
    forms.add(despelled[index]!);
  }
  forms.add(despelled.join(""));
  forms.add(plain.join(""));
  const paired = Math.min(leaves.length, pairedLeaves);
  for (let first = 0; first < paired; first++)
    for (let second = 0; second < paired; second++)
      if (first !== second) forms.add(despelled[first]! + despelled[second]!);
  const digits = leaves.map((leaf) => leaf.replace(/[^0-9]/g, "")).join("");
  return `\u0001${[...forms].join("\u0001")}\u0001\u0002${digits}\u0002`;
}

/**
 * All leaves of one call, spelled-out separators removed, folded and joined in order: appended
 * call after call, it finds a value the model wrote in pieces across calls (the mailbox in one,
 * the domain in the next).
 */
export function writtenJoin(args: unknown): string {
  return leavesOf(args)
    .map((leaf) => {
      const text =
        typeof leaf === "string" && leaf.includes("%") ? decodePercent(leaf) : String(leaf);
      return foldedLoose(` ${text} `.replace(spelled, " "));
    })
    .join("");
}

/** The folded letters and digits a value is searched for in written forms (scheme, `mailto:`, `www.` dropped). */
export function needleOf(raw: string): string {
  return foldedLoose(raw.replace(/^(?:mailto:|[a-z][a-z0-9+.-]{0,20}:\/\/)?(?:www\.)?/i, ""));
}

/**
 * Whether written forms carry a value (its {@link needleOf}): inside any form, or exactly one
 * leaf when shorter than four characters; for a phone number, its national digits among the
 * digits the call wrote.
 */
export function formsCarry(forms: string, needle: string, nationalDigits?: string): boolean {
  if (needle.length >= 4 ? forms.includes(needle) : forms.includes(`\u0001${needle}\u0001`))
    return true;
  if (nationalDigits && nationalDigits.length >= 6) {
    const start = forms.lastIndexOf("\u0002", forms.length - 2);
    return forms.slice(start).includes(nationalDigits);
  }
  return false;
}
