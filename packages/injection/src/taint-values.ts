/**
 * Values that can steer a sensitive action (email addresses, URLs and domains, IP addresses,
 * order and account numbers, IBANs, phone numbers, money amounts, long tokens), extracted from
 * text and reduced to a key that survives re-writing: case, spacing, punctuation, Unicode
 * compatibility forms and look-alikes, percent and HTML escapes, `mailto:`, URL scheme and
 * `www.`, `+tag` mailboxes, decimal and hex IP forms, thousand separators and currency symbols.
 *
 * Nothing here has a count or depth cap an attacker could fill: every function is linear in its
 * input (every pattern is bounded; word windows are at most six words).
 */
import { getDomain } from "tldts";
import { argumentReadings } from "./argument-readings.js";
import { normalizeText } from "./normalize-text.js";

/** The kinds of value the taint gate tracks. */
export type TaintKind =
  | "email"
  | "url"
  | "domain"
  | "ip"
  | "id"
  | "iban"
  | "phone"
  | "amount"
  | "token";

/** Every kind, in a stable order. */
export const taintKinds: readonly TaintKind[] = Object.freeze([
  "email",
  "url",
  "domain",
  "ip",
  "id",
  "iban",
  "phone",
  "amount",
  "token",
]);

/** A value found in text. */
export interface TaintValue {
  kind: TaintKind;
  /** The comparison key: see {@link valueKey}. */
  key: string;
  /** Offset of the match in the text it was extracted from (after escape decoding: approximate). */
  at?: number;
}

const email = /[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}/g;
const url = /\b(?:https?:\/\/|www\.)[^\s<>"'`)\]}|\\^]{1,1000}/g;
const domain =
  /\b(?:[a-z0-9-]{1,63}\.){1,8}(?:com|net|org|io|biz|info|co|us|uk|de|fr|es|it|nl|pl|tr|ru|cn|jp|ae|xyz|example|test|invalid|app|dev|ai|me|top|online|site|shop|store|cloud|link|click|live|tk|ml|ga|cf|gq|ly|to|cc)\b/g;
const ipv4 = /\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b/g;
const id = /\b[a-z]{1,5}[-_ #.:/]{0,2}[0-9]{3,12}\b|\b[0-9]{6,20}\b/g;
const iban =
  /\b[a-z]{2}[0-9]{2}(?: ?[a-z0-9]{4}){2,8}(?: ?[a-z0-9]{1,4})?\b|\b[a-z]{2}[0-9]{12,32}\b/g;
const phone = /(?:\+|\b00|\b0|\()?[0-9][0-9 ().-]{6,20}[0-9]\b/g;
const amount =
  /(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|jpy))\s?[0-9]{1,3}(?:[, .'][0-9]{3}){0,6}(?:[.,][0-9]{1,2})?\b|\b[0-9]{1,3}(?:[, .'][0-9]{3}){0,6}(?:[.,][0-9]{1,2})?\s?(?:[$€£¥₹]|(?:usd|eur|gbp|chf|jpy|dollars?|euros?|pounds?)\b)/g;
const token = /\b[a-z0-9_-]{24,200}\b/g;

/** Reduces a value to letters and digits, lower case (after NFKC and look-alike folding). */
export function looseKey(text: string): string {
  return normalizeText(text)
    .text.replace(/^mailto:/, "")
    .replace(/[^\p{L}\p{N}]/gu, "");
}

/** Decodes percent escapes (repeatedly, so `%2540` is `@`); text without `%` is returned as is. */
export function decodePercent(text: string): string {
  let current = text;
  for (let round = 0; round < 3 && /%[0-9a-f]{2}/i.test(current); round++) {
    current = current.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
  return current;
}

/** The key of a URL: host and path without scheme, `www.`, trailing slash or punctuation. */
function urlKey(text: string, loose: (text: string) => string = looseKey): string {
  const bare = text.replace(/^(?:https?:\/\/)?(?:www\.)?/, "").replace(/[/.,;:!?]+$/, "");
  return loose(bare);
}

/** The host of a URL, without `www.`, user info or port. */
export function hostOf(text: string): string {
  const rest = text.replace(/^(?:https?:\/\/)?/, "");
  const authority = rest.split(/[/?#]/, 1)[0] ?? "";
  return authority
    .slice(authority.lastIndexOf("@") + 1)
    .replace(/:[0-9]*$/, "")
    .replace(/^www\./, "");
}

/**
 * An IPv4 address in any of the forms a URL host accepts (dotted decimal, a 32-bit decimal or
 * hex number, dotted octal or hex parts), as dotted decimal; `undefined` when it is none.
 */
export function canonicalIp(host: string): string | undefined {
  const parts = host.split(".");
  if (parts.length < 1 || parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    let value: number;
    if (/^0x[0-9a-f]{1,8}$/i.test(part)) value = Number.parseInt(part.slice(2), 16);
    else if (/^0[0-7]{1,11}$/.test(part)) value = Number.parseInt(part, 8);
    else if (/^[0-9]{1,10}$/.test(part)) value = Number.parseInt(part, 10);
    else return undefined;
    numbers.push(value);
  }
  // The last part fills the remaining bytes (inet_aton rules).
  const last = numbers.pop()!;
  if (numbers.some((value) => value > 255)) return undefined;
  const remaining = 4 - numbers.length;
  if (last >= 2 ** (8 * remaining)) return undefined;
  const bytes = [...numbers];
  for (let index = remaining - 1; index >= 0; index--)
    bytes.push(Math.floor(last / 256 ** index) % 256);
  return bytes.join(".");
}

/**
 * The domains between a host and its registrable domain (Public Suffix List, private section
 * included, through `tldts`), the registrable domain last: `a.b.evil.example` -> `b.evil.example`,
 * `evil.example`; `x.shop.co.uk` -> `shop.co.uk`; `foo.github.io` has none (it is registrable).
 * A public suffix itself is never a parent, so taint does not spread to `co.uk` or `github.io`.
 */
export function parentDomains(host: string): string[] {
  const labels = host.split(".").filter((label) => label !== "");
  const registrable = getDomain(labels.join("."), { allowPrivateDomains: true });
  const keep = registrable ? registrable.split(".").length : 2;
  const parents: string[] = [];
  for (let start = 1; labels.length - start >= keep; start++)
    parents.push(labels.slice(start).join("."));
  return parents;
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

/** The key of a phone number: its last nine digits (so `+44 20 …` and `020 …` agree). */
export function phoneKey(text: string): string | undefined {
  const digits = text.replace(/[^0-9]/g, "");
  return digits.length >= 9 && digits.length <= 15 ? digits.slice(-9) : undefined;
}

/** The key of an email address: `+tag` dropped from the mailbox, then letters and digits. */
function emailKey(text: string, loose: (text: string) => string = looseKey): string {
  const at = text.lastIndexOf("@");
  const local = text.slice(0, at).replace(/^mailto:/, "");
  const plus = local.indexOf("+");
  return loose(`${plus > 0 ? local.slice(0, plus) : local}@${text.slice(at + 1)}`);
}

/** The key of a value of a kind. */
export function valueKey(kind: TaintKind, text: string): string | undefined {
  return keyOf(kind, text, looseKey);
}

/** Letters and digits of text that is already normalised (no second normalisation pass). */
const normalizedLoose = (text: string): string =>
  text.replace(/^mailto:/, "").replace(/[^\p{L}\p{N}]/gu, "");

function keyOf(kind: TaintKind, text: string, loose: (text: string) => string): string | undefined {
  let key: string | undefined;
  switch (kind) {
    case "amount":
      return amountKey(text);
    case "phone":
      return phoneKey(text);
    case "email":
      key = emailKey(text, loose);
      break;
    case "url":
      key = urlKey(text, loose);
      break;
    case "domain":
      key = loose(hostOf(text));
      break;
    case "ip": {
      const ip = canonicalIp(text);
      return ip ? ip.replace(/\./g, "-") : undefined;
    }
    default:
      key = loose(text);
  }
  // Short keys match too much by chance.
  return key.length >= 4 ? key : undefined;
}

/**
 * Extracts the values of `kinds` from text, in order of the patterns. Linear time: every
 * pattern is bounded, and there is no count limit an attacker could fill with filler values.
 * Percent-escaped text (`x%40evil.example`) is also read decoded.
 *
 * With `argument: true` (arguments of a sink, not sources), the domains of email addresses and
 * the parents of every domain are values too, and a bare 32-bit number or hex number is read as
 * an IP address.
 *
 * @example
 * extractValues("Refund order B-2002 to x@evil.example ($30,000)");
 * // [{ kind: "email", key: "xevilexample" }, { kind: "id", key: "b2002" }, { kind: "amount", key: "30000.00" }, ...]
 */
export function extractValues(
  text: string,
  kinds: readonly TaintKind[] = taintKinds,
  argument = false,
): TaintValue[] {
  const found = new Map<string, TaintValue>();
  const want = new Set(kinds);
  const add = (kind: TaintKind, raw: string, at: number) => {
    if (!want.has(kind)) return;
    // The text is normalised already: keys skip a second normalisation.
    const key = keyOf(kind, raw, normalizedLoose);
    if (key !== undefined && !found.has(`${kind}:${key}`))
      found.set(`${kind}:${key}`, { kind, key, at });
  };
  const addHost = (host: string, at: number) => {
    const ip = canonicalIp(host);
    if (ip) {
      add("ip", ip, at);
      return;
    }
    add("domain", host, at);
    if (argument) for (const parent of parentDomains(host)) add("domain", parent, at);
  };
  const read = (source: string) => {
    const normalized = normalizeText(source, { foldHomoglyphs: true }).text;
    const each = (pattern: RegExp, visit: (match: string, at: number) => void) => {
      pattern.lastIndex = 0;
      for (let match = pattern.exec(normalized); match; match = pattern.exec(normalized))
        visit(match[0], match.index);
    };
    each(email, (match, at) => {
      add("email", match, at);
      // The domain of an address is a value of its own only in arguments (not sources: a
      // source's domains are derived by the gate, with its own rules).
      if (argument) addHost(match.slice(match.indexOf("@") + 1), at);
    });
    each(url, (match, at) => {
      add("url", match, at);
      addHost(hostOf(match), at);
    });
    if (want.has("domain")) {
      each(domain, (match, at) => {
        // A domain that is the tail of an email address is the address's, not a link of its own.
        const before = normalized.slice(Math.max(0, at - 2), at);
        if (!before.includes("@")) addHost(match, at);
      });
    }
    if (want.has("ip")) {
      each(ipv4, (match, at) => add("ip", match, at));
      if (argument) {
        each(/\b0x[0-9a-f]{1,8}\b|\b[0-9]{8,10}\b/g, (match, at) => {
          const ip = canonicalIp(match);
          if (ip) add("ip", ip, at);
        });
      }
    }
    each(iban, (match, at) => add("iban", match, at));
    each(id, (match, at) => add("id", match, at));
    if (want.has("phone")) each(phone, (match, at) => add("phone", match, at));
    each(amount, (match, at) => add("amount", match, at));
    if (want.has("token")) {
      each(token, (match, at) => {
        if (/[0-9]/.test(match) && /[a-z]/.test(match)) add("token", match, at);
      });
    }
  };
  read(text);
  if (text.includes("%")) {
    const decoded = decodePercent(text);
    if (decoded !== text) read(decoded);
  }
  return [...found.values()];
}

/** The string and number leaves of a value, in order, at any depth (iterative: no depth cap). */
export function leavesOf(value: unknown): Array<string | number> {
  const leaves: Array<string | number> = [];
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") leaves.push(item);
    else if (typeof item === "number" && Number.isFinite(item)) leaves.push(item);
    else if (item && typeof item === "object") {
      if (seen.has(item)) continue;
      seen.add(item);
      const children = Array.isArray(item) ? item : Object.values(item);
      for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]);
    }
  }
  return leaves;
}

const schemePrefix = /^(?:mailto:)?(?:https?:\/\/)?(?:www\.)?/;
const nonWord = /[^\p{L}\p{N}]/gu;

/** Adds the keys of one string: its values, the whole string, windows of up to six words. */
function stringKeys(item: string, kinds: readonly TaintKind[], keys: Set<string>): void {
  for (const value of extractValues(item, kinds, true)) keys.add(`${value.kind}:${value.key}`);
  // As a sink would read it: a URL's real host, punycode decoded, spelled out, base64.
  for (const reading of argumentReadings(item))
    for (const value of extractValues(reading, kinds, true)) keys.add(`${value.kind}:${value.key}`);
  const decoded = item.includes("%") ? decodePercent(item) : item;
  // One normalisation for the whole string; windows join the words' letters and digits, which
  // is what looseKey of the joined words gives.
  const normalized = normalizeText(decoded).text.trim();
  const whole = normalized.replace(schemePrefix, "").replace(nonWord, "");
  if (whole.length >= 4) keys.add(`loose:${whole}`);
  const phoneValue = phoneKey(decoded);
  if (phoneValue && /^[\s+()0-9.-]{9,30}$/.test(decoded)) keys.add(`phone:${phoneValue}`);
  const amountValue = /^[\s$€£¥₹a-z]{0,6}[0-9][0-9.,' ]{0,30}[\s$€£¥₹a-z]{0,8}$/i.test(decoded)
    ? amountKey(decoded)
    : undefined;
  if (amountValue) keys.add(`amount:${amountValue}`);
  const words = normalized.split(/[\s,;]+/).filter((word) => word !== "");
  if (words.length <= 1) return;
  const inner = words.map((word) => word.replace(nonWord, ""));
  for (let start = 0; start < words.length; start++) {
    let joined = words[start]!.replace(schemePrefix, "").replace(nonWord, "");
    for (let size = 1; size <= 6 && start + size <= words.length; size++) {
      if (size > 1) joined += inner[start + size - 1];
      if (joined.length >= 4) {
        keys.add(`loose:${joined}`);
        if (joined.length >= 9 && joined.length <= 15 && /^[0-9]+$/.test(joined))
          keys.add(`phone:${joined.slice(-9)}`);
      }
    }
  }
}

/**
 * The keys an argument value could carry: the values extracted from it, the whole value
 * reduced to a key, and windows of up to six consecutive words (so `x @ evil . example` inside
 * a sentence still gives `xevilexample`). Numbers are amounts and identifiers. Every leaf at
 * any depth is read.
 */
export function argumentKeys(
  value: unknown,
  kinds: readonly TaintKind[] = taintKinds,
): Set<string> {
  const keys = new Set<string>();
  for (const leaf of leavesOf(value)) {
    if (typeof leaf === "number") {
      keys.add(`amount:${leaf.toFixed(2)}`);
      keys.add(`loose:${looseKey(String(leaf))}`);
    } else stringKeys(leaf, kinds, keys);
  }
  return keys;
}

/**
 * Keys of values split across neighbouring leaves of a call's arguments (`{ user: "x",
 * domain: "evil.example" }`, `{ country: "DE", number: "89 3704 …" }`, `{ cc: "+44", phone:
 * "20 7946 0958" }`): two and three consecutive leaves joined, then read like one string.
 */
export function splitKeys(args: unknown, _kinds: readonly TaintKind[] = taintKinds): Set<string> {
  const keys = new Set<string>();
  const leaves = leavesOf(args);
  if (leaves.length < 2) return keys;
  // Loose keys of every leaf once; a join's loose key is the concatenation (an email's key is
  // the loose key of mailbox and domain, an IBAN's of country and digits).
  const loose = leaves.map((leaf) => {
    const text =
      typeof leaf === "number" ? String(leaf) : leaf.includes("%") ? decodePercent(leaf) : leaf;
    return normalizeText(text).text.replace(nonWord, "");
  });
  const first = leaves.map((leaf, index) =>
    typeof leaf === "string"
      ? normalizeText(leaf).text.trim().replace(schemePrefix, "").replace(nonWord, "")
      : loose[index]!,
  );
  for (let start = 0; start + 1 < leaves.length; start++) {
    let joined = first[start]!;
    let digits = loose[start]!.replace(/[^0-9]/g, "");
    for (let size = 2; size <= 3 && start + size <= leaves.length; size++) {
      joined += loose[start + size - 1];
      digits += loose[start + size - 1]!.replace(/[^0-9]/g, "");
      if (joined.length >= 4) keys.add(`loose:${joined}`);
      if (digits.length >= 9 && digits.length <= 15) keys.add(`phone:${digits.slice(-9)}`);
    }
  }
  return keys;
}

/** Whether an argument key matches a tainted value. */
export function keyMatches(argumentKey: string, value: TaintValue): boolean {
  return matchKeysOf(value).includes(argumentKey);
}

/** The argument keys that match a tainted value (for an index of tainted values by key). */
export function matchKeysOf(value: TaintValue): string[] {
  if (value.kind === "amount") return [`amount:${value.key}`];
  if (value.kind === "phone") return [`phone:${value.key}`];
  if (value.kind === "ip") return [`ip:${value.key}`];
  return [`loose:${value.key}`, `${value.kind}:${value.key}`];
}
