/**
 * What surrounds a candidate: the key it is the value of (`"version": "…"`, `build=…`,
 * `ISBN: …`) and the words just before it. Detectors use it the way Presidio's context
 * enhancement does: a version after `v`, `/` or `firmware` is not an IP address, an EAN under
 * `sku` is not a card. Every look is bounded (a few dozen characters), so context costs
 * nothing that grows with the text.
 * @internal
 */

const KEY_WINDOW = 48;

function isKeyCode(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 || // _
    code === 45 || // -
    code === 46 // .
  );
}

/**
 * The key a value at `start` is assigned to, lower-cased: `"isbn": "` → `isbn`, `build=` →
 * `build`, `Tracking number: ` → `tracking number`, or undefined when none is there.
 */
export function keyBefore(text: string, start: number): string | undefined {
  const floor = Math.max(0, start - KEY_WINDOW);
  let index = start - 1;
  // The value's opening quote and spaces.
  while (index >= floor && (text.charCodeAt(index) === 32 || text.charCodeAt(index) === 9)) index--;
  if (index >= floor && (text.charCodeAt(index) === 34 || text.charCodeAt(index) === 39)) index--;
  while (index >= floor && text.charCodeAt(index) === 32) index--;
  const separator = text.charCodeAt(index);
  if (separator !== 58 && separator !== 61) return undefined; // ':' or '='
  index--;
  while (index >= floor && text.charCodeAt(index) === 32) index--;
  if (index >= floor && (text.charCodeAt(index) === 34 || text.charCodeAt(index) === 39)) index--;
  const end = index + 1;
  // A key may be two words ("Tracking number:", "Date of birth:").
  let words = 0;
  while (index >= floor) {
    const code = text.charCodeAt(index);
    if (isKeyCode(code)) {
      index--;
      continue;
    }
    if (code === 32 && words < 3 && index > floor && isKeyCode(text.charCodeAt(index - 1))) {
      words++;
      index--;
      continue;
    }
    break;
  }
  if (end - index - 1 <= 0) return undefined;
  return text.slice(index + 1, end).toLowerCase();
}

/** Up to `size` characters before `start`, lower-cased, for word tests. */
export function textBefore(text: string, start: number, size = 32): string {
  return text.slice(Math.max(0, start - size), start).toLowerCase();
}

/** Up to `size` characters after `end`, lower-cased. */
export function textAfter(text: string, end: number, size = 24): string {
  return text.slice(end, end + size).toLowerCase();
}

/** The word right before `start` (skipping spaces and one `:`), as written, or "". */
export function wordBefore(text: string, start: number): string {
  let index = start - 1;
  const floor = Math.max(0, start - 40);
  while (index >= floor && (text.charCodeAt(index) === 32 || text.charCodeAt(index) === 58))
    index--;
  const end = index + 1;
  while (index >= floor && isKeyCode(text.charCodeAt(index)) && text.charCodeAt(index) !== 46)
    index--;
  return text.slice(index + 1, end);
}

// Words and keys that name an identifier that is not personal (a book, a parcel, a product,
// an order), and those that name the personal kinds digits can be.
const IDENTIFIER_WORDS = new Set(
  `isbn isbn-10 isbn-13 isbn10 isbn13 issn ean upc gtin sku barcode asin tracking track trk
  shipment parcel awb waybill order orders invoice inv ticket case ref reference part pn serial
  sn item product article model lot batch version build release firmware`.split(/\s+/),
);
const NUMBER_WORDS = new Set(["no", "nr", "num", "number", "code", "id"]);
const IDENTIFIER_KEY =
  /(?:^|[^a-z])(?:isbn(?:-1[03])?|issn|ean|upc|gtin|sku|barcode|asin|tracking|track|trk|shipment|parcel|awb|waybill|order|orders|invoice|inv|ticket|case|ref|reference|part|pn|serial|sn|item|product|article|model|lot|batch|version|build|release|firmware)(?:[\s_-]?(?:no|nr|num|number|code|id|#))?$/;
const PERSONAL_CONTEXT =
  /(?:card|visa|master\s?card|amex|credit|debit|pan|cc|phone|tel|telephone|mobile|cell|fax|call|whatsapp|sms|ssn|social\s+security|account|iban|bank)/;

/** The last two words before `start` (skipping `: = # . " '` and spaces), lower case. */
function wordsBeforeValue(text: string, start: number): [string, string] {
  let index = start - 1;
  const floor = Math.max(0, start - 28);
  const words: string[] = [];
  while (words.length < 2 && index >= floor) {
    while (index >= floor) {
      const code = text.charCodeAt(index);
      // space, tab, : = # . " '
      if (
        code === 32 ||
        code === 9 ||
        code === 58 ||
        code === 61 ||
        code === 35 ||
        code === 46 ||
        code === 34 ||
        code === 39
      )
        index--;
      else break;
    }
    const end = index + 1;
    while (index >= floor) {
      const code = text.charCodeAt(index);
      if (
        (code >= 97 && code <= 122) ||
        (code >= 65 && code <= 90) ||
        (code >= 48 && code <= 57) ||
        code === 45
      )
        index--;
      else break;
    }
    if (end - index - 1 <= 0) break;
    words.push(text.slice(index + 1, end).toLowerCase());
    if (
      text.charCodeAt(index) === 10 ||
      text.charCodeAt(index) === 44 ||
      text.charCodeAt(index) === 59
    )
      break;
  }
  return [words[0] ?? "", words[1] ?? ""];
}

/**
 * Whether the digits at `start` are labelled as a book, parcel, product or order identifier
 * (`ISBN 978-…`, `tracking=…`, `"sku": "…"`, `Order #…`, `tracking number …`), with no word
 * for a card, phone or SSN as that label. Looks at the key and the two words before: O(1).
 */
export function identifierContext(text: string, start: number): boolean {
  const key = keyBefore(text, start);
  if (key !== undefined) {
    if (PERSONAL_CONTEXT.test(key)) return false;
    if (IDENTIFIER_KEY.test(key)) return true;
  }
  const [last, previous] = wordsBeforeValue(text, start);
  if (IDENTIFIER_WORDS.has(last)) return true;
  return NUMBER_WORDS.has(last) && IDENTIFIER_WORDS.has(previous);
}
