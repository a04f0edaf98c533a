import { ibanChecksumValid } from "../checksums.js";
import type { Detector } from "../detector.js";
import { scanCandidates } from "./scan-candidates.js";

/** IBAN length per country (SWIFT IBAN registry, plus the experimental countries in common use). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BI: 27,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DJ: 27,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FK: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HN: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  LY: 25,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MN: 20,
  MR: 27,
  MT: 31,
  MU: 30,
  NI: 28,
  NL: 18,
  NO: 15,
  OM: 23,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  RU: 33,
  SA: 24,
  SC: 31,
  SD: 18,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  SO: 23,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
  YE: 30,
};

// Country code, check digits, then up to 30 alphanumerics, each optionally after one space
// or hyphen (IBANs are printed in groups of four). The candidate may run into the next word;
// the country length cuts it back.
const CANDIDATE = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){10,30}/g;

/** Whether a compact, upper-case IBAN has its country's length and a valid mod-97 check. */
export function isValidIban(iban: string): boolean {
  const length = IBAN_LENGTHS[iban.slice(0, 2)];
  return length === iban.length && ibanChecksumValid(iban);
}

/**
 * How long the IBAN at a candidate is, written as it stands (with its spaces or hyphens), or
 * `undefined`: its country's registered length of alphanumerics must end at a word boundary
 * or a separator, and pass the mod-97 check.
 */
function ibanLength(text: string, match: RegExpExecArray): number | undefined {
  const candidate = match[0];
  const length = IBAN_LENGTHS[candidate.slice(0, 2).toUpperCase()];
  // No such country: the next candidate may start inside this one ("xx IBAN DE89...").
  if (length === undefined) return undefined;
  let compact = "";
  let end = -1;
  for (let index = 0; index < candidate.length && compact.length < length; index++) {
    const char = candidate[index]!;
    if (char !== " " && char !== "-") {
      compact += char;
      if (compact.length === length) end = index + 1;
    }
  }
  const next = candidate.charCodeAt(end);
  const atBoundary =
    end !== -1 &&
    (end === candidate.length
      ? !/[A-Za-z0-9]/.test(text[match.index + end] ?? "")
      : next === 32 || next === 45);
  return atBoundary && ibanChecksumValid(compact.toUpperCase()) ? end : undefined;
}

/**
 * Finds IBANs, compact or grouped, in any case: the country's registered length and the
 * ISO 7064 mod-97 check must both hold.
 */
export function ibanDetector(): Detector {
  return {
    type: "IBAN",
    name: "iban",
    priority: 50,
    maxLength: 48,
    find(text) {
      return scanCandidates(text, CANDIDATE, (match) => ibanLength(text, match), true);
    },
  };
}
