/**
 * Detection taint: the values of flagged tool output (only its sealed `<flagged_span>` marks
 * with a known envelope), with what they imply (an address's domain and parents up to the
 * registrable domain, an IBAN's account number), indexed by match key.
 */
import type { ScanVerdict, SeenOutput } from "@loopguard/core";
import { normalizeText } from "./normalize-text.js";
import { flaggedSpanTag } from "./quarantine.js";
import {
  decodePercent,
  extractValues,
  hostOf,
  matchKeysOf,
  parentDomains,
  type TaintKind,
  type TaintValue,
} from "./taint-values.js";

/** Where a tainted value came from. */
export interface TaintSource {
  value: TaintValue;
  tool: string;
  toolUseId: string;
  verdict: ScanVerdict;
  /** Derived from another tainted value (a domain of an address, an IBAN's account number). */
  derivedFrom?: TaintKind;
}

/** How detection taint reads outputs. */
export interface TaintReading {
  kinds: readonly TaintKind[];
  minVerdict: Exclude<ScanVerdict, "clean">;
  isSource: (output: SeenOutput) => boolean;
  envelope?: { readonly tag: string; verify(text: string): boolean };
  derive: boolean;
}

const verdictRank: Record<ScanVerdict, number> = { clean: 0, suspicious: 1, injection: 2 };

/**
 * The parts of an output that taint: with a known envelope and marks, the text inside
 * `<flagged_span>` … `</flagged_span>`; otherwise the whole text (fail closed).
 */
export function flaggedParts(output: SeenOutput, envelope: TaintReading["envelope"]): string[] {
  const text = output.text;
  // Marks count only in an envelope this envelope sealed (content cannot forge the seal).
  if (!envelope?.verify(text)) return [text];
  const headerEnd = text.indexOf(">\n");
  if (headerEnd < 0 || !/ flagged_spans="[0-9]+"/.test(text.slice(0, headerEnd))) return [text];
  const open = `<${flaggedSpanTag}>`;
  const close = `</${flaggedSpanTag}>`;
  const parts: string[] = [];
  let from = text.indexOf(open, headerEnd);
  while (from >= 0) {
    const end = text.indexOf(close, from + open.length);
    // An unclosed mark taints the rest of the text.
    parts.push(text.slice(from + open.length, end < 0 ? text.length : end));
    if (end < 0) break;
    from = text.indexOf(open, end + close.length);
  }
  return parts.length > 0 ? parts : [text];
}

/** Hosts of the email addresses and URLs in text (normalised, escapes decoded). */
function hostsIn(text: string): string[] {
  const hosts = new Set<string>();
  for (const value of text.includes("%") ? [text, decodePercent(text)] : [text]) {
    const normalized = normalizeText(value, { foldHomoglyphs: true }).text;
    for (const match of normalized.matchAll(/@([a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8})/g))
      hosts.add(match[1]!);
    for (const match of normalized.matchAll(/\b(?:https?:\/\/|www\.)[^\s<>"'`)\]}|\\^]{1,1000}/g)) {
      const host = hostOf(match[0]);
      if (/^[a-z0-9.-]+\.[a-z]{2,}$/.test(host)) hosts.add(host);
    }
  }
  return [...hosts];
}

/** Bank-code and account lengths in the BBAN of some countries (after the 4 leading characters). */
const ibanLayouts: Record<string, number[]> = {
  de: [8, 10],
  fr: [5, 5, 11, 2],
  es: [4, 4, 2, 10],
  it: [1, 5, 5, 12],
  nl: [4, 10],
  gb: [4, 6, 8],
  pl: [8, 16],
  tr: [5, 1, 16],
  be: [3, 7, 2],
  at: [5, 11],
  ch: [5, 12],
};

/** Keys of the parts of an IBAN key (lower case, letters and digits only). */
export function ibanParts(key: string): string[] {
  const bban = key.slice(4);
  const parts = new Set<string>([bban]);
  const layout = ibanLayouts[key.slice(0, 2)];
  if (layout) {
    let at = 0;
    for (const size of layout) {
      const part = bban.slice(at, at + size);
      if (part.length >= 4) parts.add(part);
      at += size;
    }
  }
  const digits = /[0-9]+$/.exec(bban)?.[0] ?? "";
  for (let start = 0; digits.length - start >= 6; start++) {
    parts.add(digits.slice(start));
    const trimmed = digits.slice(start).replace(/^0+/, "");
    if (trimmed.length >= 6) parts.add(trimmed);
  }
  return [...parts];
}

/**
 * Taints the values of one output, when its verdict is at or above `minVerdict` and its tool is
 * a source: into `tainted`, keyed by match key, the first source of each key kept. `all` is the
 * output's values, already extracted.
 */
export function taintOutput(
  tainted: Map<string, TaintSource>,
  output: SeenOutput,
  all: readonly TaintValue[],
  reading: TaintReading,
): void {
  const verdict = output.scan?.verdict;
  if (!verdict || verdictRank[verdict] < verdictRank[reading.minVerdict]) return;
  if (!reading.isSource(output)) return;
  const origin = { tool: output.tool, toolUseId: output.toolUseId, verdict };
  const taint = (source: TaintSource) => {
    for (const key of matchKeysOf(source.value)) if (!tainted.has(key)) tainted.set(key, source);
  };
  const parts = flaggedParts(output, reading.envelope);
  for (const part of parts) {
    // The whole text's values are already extracted: reuse them when the whole text taints.
    const values =
      parts.length === 1 && part === output.text ? all : extractValues(part, reading.kinds);
    for (const value of values) {
      taint({ value, ...origin });
      if (!reading.derive) continue;
      if (value.kind === "iban" && value.key.length > 8) {
        // The parts of an IBAN: the BBAN (after country and check digits), the bank code and
        // account number where the country's layout is known, and every digit suffix of six or
        // more (account numbers are written without the bank code, with or without zeros).
        for (const key of ibanParts(value.key))
          taint({ value: { kind: "id", key }, ...origin, derivedFrom: "iban" });
      }
    }
    if (reading.derive && (reading.kinds.includes("domain") || reading.kinds.includes("email"))) {
      // Domains of tainted addresses and URLs, and their parents: every address there is covered.
      for (const host of hostsIn(part)) {
        for (const domain of [host, ...parentDomains(host)]) {
          const key = domain.replace(/[^\p{L}\p{N}]/gu, "");
          if (key.length >= 4)
            taint({ value: { kind: "domain", key }, ...origin, derivedFrom: "email" });
        }
      }
    }
  }
}
