import {
  ean13Valid,
  fedexExpressValid,
  fedexGroundValid,
  luhnValid,
  upcValid,
} from "../checksums.js";
import { keyBefore } from "../context.js";
import type { Detector } from "../detector.js";
import { scanCandidates } from "./scan-candidates.js";

// 12 to 19 digits, each optionally preceded by one separator (space, hyphen, dot, slash).
// One digit per repetition keeps backtracking bounded; the lookbehind rejects starts inside
// a digit run, so a long run of digits is tried once, not at every position.
const CANDIDATE = /(?<![\w.\-/])\d(?:[ \-./]?\d){11,18}(?!\w)/g;

/**
 * Whether a digit string is a plausible card number: issuer prefix and length, then Luhn.
 * The prefixes are wide on purpose (Maestro, UnionPay, UATP and JCB span many ranges); the
 * Luhn check carries the precision.
 */
export function isCardNumber(digits: string): boolean {
  const length = digits.length;
  if (length < 12 || length > 19) return false;
  const first = digits.charCodeAt(0) - 48;
  const two = Number(digits.slice(0, 2));
  switch (first) {
    case 0:
      if (!digits.startsWith("0604")) return false;
      break;
    case 1:
      // UATP (15) and the old JCB 1800 range (15).
      if (length !== 15) return false;
      break;
    case 2:
      // Mastercard 2-series, old JCB 2131, and other 2xxx issuers.
      if (length < 14) return false;
      break;
    case 3:
      if ((two === 34 || two === 37) && length !== 15) return false;
      if (two !== 34 && two !== 37 && length < 14) return false;
      break;
    case 4:
      if (length !== 13 && length !== 16 && length !== 19) return false;
      break;
    case 5:
    case 6:
      break;
    default:
      return false;
  }
  return luhnValid(digits);
}

const CODE_LABEL =
  /(?:isbn|ean|upc|gtin|sku|barcode|asin|tracking|track|shipment|parcel|awb|waybill|fedex|ups)(?:[\s_-]?(?:no|nr|num|number|code|id|#))?[\s:=#."']*$/i;

/**
 * Whether Luhn-valid digits are a product code or a tracking number instead: labelled as one
 * (`EAN`, `"sku":`, `tracking=`) and valid as one (the EAN-13, UPC-A or FedEx check digit,
 * which a 16-digit card number can never be), or a FedEx Ground number (96…, 15 digits).
 * An `order` or `invoice` label is not enough: a card is redacted wherever it is written.
 */
function notCard(text: string, start: number, digits: string): boolean {
  if (digits.length === 15 && digits.startsWith("96") && fedexGroundValid(digits)) return true;
  const validCode =
    (digits.length === 13 && ean13Valid(digits)) ||
    (digits.length === 12 && (upcValid(digits) || fedexExpressValid(digits)));
  if (!validCode) return false;
  const key = keyBefore(text, start);
  if (key !== undefined && CODE_LABEL.test(key)) return true;
  const before = text.slice(Math.max(0, start - 40), start);
  const clause = before.slice(Math.max(before.lastIndexOf(","), before.lastIndexOf("\n")) + 1);
  return (
    CODE_LABEL.test(clause) ||
    /(?:ean|upc|gtin|barcode|sku|tracking|fedex)\b[^.;\n]{0,24}$/i.test(clause)
  );
}

/** The groupings cards are printed in: fours with a short tail, Amex 4-6-5, Diners 4-6-4. */
const CARD_GROUPING =
  /^(?:\d{4}(?:[ .\-/]\d{4}){2,3}(?:[ .\-/]\d{1,4})?|\d{4}[ .\-/]\d{6}[ .\-/]\d{4,5})$/;

/**
 * How long the card number at a candidate is, or `undefined`: the longest prefix, cut at the
 * end or before a separator, that is a card number (issuer prefix, length, Luhn) and not
 * written as something else.
 */
function cardLength(text: string, match: RegExpExecArray): number | undefined {
  const candidate = match[0];
  const ends: number[] = [];
  let digits = "";
  const prefixDigits: string[] = [];
  for (let index = 0; index < candidate.length; index++) {
    const code = candidate.charCodeAt(index);
    if (code >= 48 && code <= 57) {
      digits += candidate[index];
      const next = candidate.charCodeAt(index + 1);
      // A cut is allowed at the end or before a separator.
      if (index === candidate.length - 1 || !(next >= 48 && next <= 57)) {
        ends.push(index + 1);
        prefixDigits.push(digits);
      }
    }
  }
  for (let cut = ends.length - 1; cut >= 0; cut--) {
    if (isCardNumber(prefixDigits[cut]!)) {
      if (notCard(text, match.index, prefixDigits[cut]!)) return undefined;
      // Dots are how versions are written (40.15.86984.9996); a card written with dots
      // is grouped as cards are (4111.1111.1111.1111).
      const written = candidate.slice(0, ends[cut]!);
      if (written.includes(".") && !CARD_GROUPING.test(written)) return undefined;
      return ends[cut]!;
    }
  }
  return undefined;
}

/**
 * Finds payment card numbers: 12 to 19 digits with any separators, a known issuer prefix
 * and a valid Luhn check digit. A run that is too long is tried again at each separator, so
 * `4111 1111 1111 1111 123` still yields the card.
 */
export function creditCardDetector(): Detector {
  return {
    type: "CREDIT_CARD",
    name: "credit-card",
    priority: 45,
    maxLength: 64,
    find(text) {
      return scanCandidates(text, CANDIDATE, (match) => cardLength(text, match));
    },
  };
}
