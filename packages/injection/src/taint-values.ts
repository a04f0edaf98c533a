/**
 * Values that can steer a sensitive action (email addresses, URLs and domains, order and
 * account numbers, IBANs, money amounts, long tokens), extracted from text and reduced to a
 * key that survives re-writing: case, spacing, punctuation, Unicode compatibility forms and
 * look-alikes, `mailto:`, URL scheme and `www.`, thousand separators and currency symbols.
 */
import { normalizeText } from "./normalize-text.js";

/** The kinds of value the taint gate tracks. */
export type TaintKind = "email" | "url" | "domain" | "id" | "iban" | "amount" | "token";

/** Every kind, in a stable order. */
export const taintKinds: readonly TaintKind[] = Object.freeze([
  "email",
  "url",
  "domain",
  "id",
  "iban",
  "amount",
  "token",
]);

/** A value found in text. */
export interface TaintValue {
  kind: TaintKind;
  /** The comparison key: see {@link valueKey}. */
  key: string;
}

const email = /[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}/g;
const url = /\b(?:https?:\/\/|www\.)[^\s<>"'`)\]}|\\^]{1,1000}/g;
const domain =
  /\b(?:[a-z0-9-]{1,63}\.){1,8}(?:com|net|org|io|biz|info|co|us|uk|de|fr|es|it|nl|ru|cn|jp|xyz|example|test|invalid|app|dev|ai|me|top|online|site|shop|store|cloud|link|click|live|tk|ml|ga|cf|gq|ly|to|cc)\b/g;
const id = /\b[a-z]{1,5}[-_ #.:/]{0,2}[0-9]{3,12}\b|\b[0-9]{6,20}\b/g;
const iban =
  /\b[a-z]{2}[0-9]{2}(?: ?[a-z0-9]{4}){2,8}(?: ?[a-z0-9]{1,4})?\b|\b[a-z]{2}[0-9]{12,32}\b/g;
const amount =
  /(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|jpy))\s?[0-9]{1,3}(?:[, .'][0-9]{3}){0,6}(?:[.,][0-9]{1,2})?\b|\b[0-9]{1,3}(?:[, .'][0-9]{3}){0,6}(?:[.,][0-9]{1,2})?\s?(?:[$€£¥₹]|(?:usd|eur|gbp|chf|jpy|dollars?|euros?|pounds?)\b)/g;
const token = /\b[a-z0-9_-]{24,200}\b/g;

/** Reduces a value to letters and digits, lower case (after NFKC and look-alike folding). */
export function looseKey(text: string): string {
  return normalizeText(text)
    .text.replace(/^mailto:/, "")
    .replace(/[^\p{L}\p{N}]/gu, "");
}

/** The key of a URL: host and path without scheme, `www.`, trailing slash or punctuation. */
function urlKey(text: string): string {
  const bare = text.replace(/^(?:https?:\/\/)?(?:www\.)?/, "").replace(/[/.,;:!?]+$/, "");
  return looseKey(bare);
}

/** The host of a URL, without `www.`. */
function hostOf(text: string): string {
  return text.replace(/^(?:https?:\/\/)?(?:www\.)?/, "").split(/[/?#:]/, 1)[0] ?? "";
}

/** The number of a money amount as a fixed-point string, or `undefined`. */
export function amountKey(text: string): string | undefined {
  const digits = text
    .replace(/[^0-9.,' ]/g, "")
    .trim()
    .replace(/[' ]/g, "");
  if (!/[0-9]/.test(digits)) return undefined;
  let normalized = digits;
  const lastSeparator = Math.max(digits.lastIndexOf("."), digits.lastIndexOf(","));
  if (lastSeparator >= 0 && digits.length - lastSeparator - 1 <= 2) {
    // The last separator followed by one or two digits is the decimal point.
    normalized = `${digits.slice(0, lastSeparator).replace(/[.,]/g, "")}.${digits.slice(lastSeparator + 1)}`;
  } else {
    normalized = digits.replace(/[.,]/g, "");
  }
  const value = Number(normalized);
  return Number.isFinite(value) ? value.toFixed(2) : undefined;
}

/** The key of a value of a kind. */
export function valueKey(kind: TaintKind, text: string): string | undefined {
  let key: string | undefined;
  switch (kind) {
    case "amount":
      return amountKey(text);
    case "url":
      key = urlKey(text);
      break;
    case "domain":
      key = looseKey(hostOf(text));
      break;
    default:
      key = looseKey(text);
  }
  // Short keys match too much by chance.
  return key.length >= 4 ? key : undefined;
}

/**
 * Extracts the values of `kinds` from text. Linear time: every pattern is bounded. At most
 * `limit` values are returned.
 *
 * @example
 * extractValues("Refund order B-2002 to x@evil.example ($30,000)");
 * // [{ kind: "email", key: "xevilexample" }, { kind: "id", key: "b2002" }, { kind: "amount", key: "30000.00" }, ...]
 */
export function extractValues(
  text: string,
  kinds: readonly TaintKind[] = taintKinds,
  limit = 10_000,
  emailDomains = false,
): TaintValue[] {
  const normalized = normalizeText(text, { foldHomoglyphs: true }).text;
  const found = new Map<string, TaintValue>();
  const add = (kind: TaintKind, raw: string) => {
    if (found.size >= limit) return;
    const key = valueKey(kind, raw);
    if (key !== undefined) found.set(`${kind}:${key}`, { kind, key });
  };
  const want = new Set(kinds);
  const each = (pattern: RegExp, kind: TaintKind, also?: (match: string) => void) => {
    pattern.lastIndex = 0;
    for (
      let match = pattern.exec(normalized);
      match && found.size < limit;
      match = pattern.exec(normalized)
    ) {
      if (want.has(kind)) add(kind, match[0]);
      also?.(match[0]);
    }
  };
  each(email, "email", (match) => {
    // The domain of an address is a value of its own only when asked for (arguments, not sources).
    if (emailDomains && want.has("domain")) add("domain", match.slice(match.indexOf("@") + 1));
  });
  each(url, "url", (match) => {
    if (want.has("domain")) add("domain", hostOf(match));
  });
  if (want.has("domain")) {
    domain.lastIndex = 0;
    for (
      let match = domain.exec(normalized);
      match && found.size < limit;
      match = domain.exec(normalized)
    ) {
      // A domain that is the tail of an email address is the address's, not a link of its own.
      const before = normalized.slice(Math.max(0, match.index - 2), match.index);
      if (!before.includes("@")) add("domain", match[0]);
    }
  }
  each(iban, "iban");
  each(id, "id");
  each(amount, "amount");
  if (want.has("token")) {
    token.lastIndex = 0;
    for (
      let match = token.exec(normalized);
      match && found.size < limit;
      match = token.exec(normalized)
    ) {
      if (/[0-9]/.test(match[0]) && /[a-z]/.test(match[0])) add("token", match[0]);
    }
  }
  return [...found.values()];
}

/**
 * The keys an argument value could carry: the values extracted from it, the whole value
 * reduced to a key, and windows of up to six consecutive words (so `x @ evil . example` inside
 * a sentence still gives `xevilexample`). Numbers are amounts and identifiers.
 */
export function argumentKeys(
  value: unknown,
  kinds: readonly TaintKind[] = taintKinds,
): Set<string> {
  const keys = new Set<string>();
  const visit = (item: unknown, depth: number) => {
    if (keys.size > 20_000 || depth > 8) return;
    if (typeof item === "number" && Number.isFinite(item)) {
      keys.add(`amount:${item.toFixed(2)}`);
      keys.add(`loose:${looseKey(String(item))}`);
      return;
    }
    if (typeof item === "string") {
      for (const value of extractValues(item, kinds, 10_000, true))
        keys.add(`${value.kind}:${value.key}`);
      const whole = looseKey(
        item.replace(/^\s*mailto:/i, "").replace(/^\s*(?:https?:\/\/)?(?:www\.)?/i, ""),
      );
      if (whole.length >= 4) keys.add(`loose:${whole}`);
      const amountValue = /^[\s$€£¥₹a-z]{0,6}[0-9][0-9.,' ]{0,30}[\s$€£¥₹a-z]{0,8}$/i.test(item)
        ? amountKey(item)
        : undefined;
      if (amountValue) keys.add(`amount:${amountValue}`);
      const words = item
        .split(/[\s,;]+/)
        .filter((word) => word !== "")
        .slice(0, 2000);
      for (let start = 0; start < words.length; start++) {
        let joined = "";
        for (let size = 1; size <= 6 && start + size <= words.length; size++) {
          joined += words[start + size - 1];
          const key = looseKey(
            joined.replace(/^mailto:/i, "").replace(/^(?:https?:\/\/)?(?:www\.)?/i, ""),
          );
          if (key.length >= 4) keys.add(`loose:${key}`);
        }
      }
      return;
    }
    if (Array.isArray(item)) {
      for (const element of item.slice(0, 1000)) visit(element, depth + 1);
      return;
    }
    if (item && typeof item === "object") {
      for (const element of Object.values(item).slice(0, 1000)) visit(element, depth + 1);
    }
  };
  visit(value, 0);
  return keys;
}

/** Whether an argument key matches a tainted value. */
export function keyMatches(argumentKey: string, value: TaintValue): boolean {
  if (value.kind === "amount") return argumentKey === `amount:${value.key}`;
  return argumentKey === `loose:${value.key}` || argumentKey === `${value.kind}:${value.key}`;
}
