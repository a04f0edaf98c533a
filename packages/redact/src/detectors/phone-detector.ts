import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { isbn10Valid, isbn13Valid } from "../checksums.js";
import { identifierContext } from "../context.js";
import type { Detector } from "../detector.js";
import { scanCandidates } from "./scan-candidates.js";

// Digits with up to three separators between them (space, dot, hyphen, slash, parentheses),
// an optional leading "+" or "(", and an optional extension. Separators and digits are
// disjoint, so the engine never backtracks more than the 17 repetitions.
const CANDIDATE =
  /(?<![\w+\-./]|\d[ .\-/])(?:\+|\(\+?)?\d(?:[ .\-/()]{0,3}\d){5,16}(?!\d)(?:[ ]?(?:x|ext\.?|#)[ ]?\d{1,6}(?!\d))?/g;

const YEAR = /^(?:19|20)\d\d$/;

/** Whether a bare run of digits is a valid national number where runs like it are common. */
function validBareNumber(digits: string): boolean {
  if (digits.length === 10) return parsePhoneNumberFromString(digits, "US")?.isValid() === true;
  if (digits.length === 11 && digits.startsWith("1")) {
    return (
      parsePhoneNumberFromString(digits, "CN")?.isValid() === true ||
      parsePhoneNumberFromString(`+${digits}`)?.isValid() === true
    );
  }
  return false;
}

/** Countries whose national numbers open with a trunk 0, in the order they are tried. */
const TRUNK_ZERO_REGIONS = ["GB", "DE", "FR", "NL", "SE", "PL", "JP", "KR", "CN", "IT"] as const;

/** Whether digits opening with 0 are a valid national number of one of those countries. */
function nationalValid(digits: string): boolean {
  for (const region of TRUNK_ZERO_REGIONS)
    if (parsePhoneNumberFromString(digits, region)?.isValid() === true) return true;
  return false;
}

/** Whether a candidate with several digit groups has the shape of a phone number. */
function phoneShaped(body: string): boolean {
  const groups = body.split(/\D+/).filter((group) => group.length > 0);
  const gaps = body
    .replace(/^\D+|\D+$/g, "")
    .split(/\d+/)
    .filter((gap) => gap.length > 0);
  const lengths = groups.map((group) => group.length);
  const total = lengths.reduce((sum, length) => sum + length, 0);
  if (total < 7 || total > 15) return false;
  const shape = lengths.join(",");
  // Dates and timestamps: 2019-11-04 09, 04/11/2019.
  const dateGaps = gaps.length >= 2 && gaps[0] === gaps[1] && /^[-/.]$/.test(gaps[0]!);
  if (dateGaps && /^(?:4,2,2|2,2,4|1,2,4|2,1,4|1,1,4)(?:,|$)/.test(shape)) return false;
  // The US SSN shape belongs to the SSN detector, valid or not, and so does a run that opens
  // or closes with one ("123-45-6789 / 234-56", one of a list).
  if (shape === "3,2,4") return false;
  if (/^\d{3}-\d{2}-\d{4}\D|\D\d{3}-\d{2}-\d{4}$/.test(body)) return false;
  // Dotted quads are IP addresses or versions, and so is any dotted run of four groups that
  // does not open with a trunk 0 (10.0.22621.2861, 24.10.5.7335): phones written with dots
  // have three groups (217.438.2219) or the French five pairs (06.12.34.56.78).
  if (gaps.every((gap) => gap === ".") && groups.length === 4 && !groups[0]!.startsWith("0")) {
    return false;
  }
  // Year ranges (1999-2004), and a house number beside a street number or ZIP ("87645 22").
  if (groups.length === 2) {
    if (YEAR.test(groups[0]!) && YEAR.test(groups[1]!)) return false;
    // A national number with its trunk 0 (07400 674563, 0612 3456789) is checked against the
    // numbering plans of the countries that write one; other pairs are house numbers and ZIPs.
    if (lengths[1]! < 4 || lengths[0]! > 4)
      return groups[0]!.startsWith("0") && nationalValid(groups.join(""));
  }
  // Card and IBAN grouping (fours with a short tail) is not how phone numbers are written.
  if (groups.length >= 3 && lengths.slice(0, -1).every((length) => length === 4)) return false;
  // Thousands (1 000 000).
  if (lengths[0] === 1 && lengths.slice(1).every((length) => length === 3) && !/[()]/.test(body)) {
    return false;
  }
  return true;
}

/**
 * Whether a phone-shaped candidate is something else: an ISBN (valid check digit, hyphenated
 * as books are), or digits labelled as a product, parcel, order or book identifier.
 */
function notPhone(text: string, start: number, body: string): boolean {
  if (body.startsWith("+")) return false;
  // A Japanese postal code: 〒160-0023.
  if (text.charCodeAt(start - 1) === 0x3012 || text.charCodeAt(start - 2) === 0x3012) return true;
  const digits = body.replace(/[^0-9Xx]/g, "");
  if (digits.length === 13 && isbn13Valid(digits)) return true;
  if (digits.length === 10 && /^\d{1,5}-\d{1,7}-\d{1,7}-[\dXx]$/.test(body) && isbn10Valid(digits))
    return true;
  // "(415) 555-0132" is written as a phone number whatever label stands before it.
  if (body.includes("(")) return false;
  return identifierContext(text, start);
}

/** Whether the candidate at a match is a phone number (its extension, `x565`, aside). */
function acceptedPhone(text: string, match: RegExpExecArray): boolean {
  const candidate = match[0];
  let body = candidate;
  const extension = /[ ]?(?:x|ext\.?|#)[ ]?\d{1,6}$/.exec(candidate);
  if (extension !== null) body = candidate.slice(0, extension.index);
  let accepted: boolean;
  if (body.startsWith("+") || body.startsWith("(+")) {
    const parsed = parsePhoneNumberFromString(body.replace(/[()]/g, " "));
    accepted = parsed?.isPossible() === true;
    if (!accepted) {
      const international = parsePhoneNumberFromString(body);
      accepted = international?.isPossible() === true;
    }
  } else {
    accepted = /^\d+$/.test(body) ? validBareNumber(body) : phoneShaped(body);
  }
  return accepted && !notPhone(text, match.index, body);
}

/**
 * Finds phone numbers. International numbers (`+` and a country code) are checked with
 * libphonenumber's metadata; bare runs of ten or eleven digits must be valid US or Chinese
 * numbers there; grouped national numbers (`(415) 555-0132`, `0612 345 67 89`,
 * `09-7625400`) are accepted by shape, seven to fifteen digits, minus the shapes of dates,
 * SSNs, IP addresses and year ranges. Extensions (`x565`) are part of the span.
 */
export function phoneDetector(): Detector {
  return {
    type: "PHONE",
    name: "phone",
    priority: 20,
    maxLength: 48,
    find(text) {
      return scanCandidates(text, CANDIDATE, (match) =>
        acceptedPhone(text, match) ? match[0].length : undefined,
      );
    },
  };
}
