/**
 * Sink argument values parsed the way the sink parses them, reduced to one canonical form per
 * kind: a URL by WHATWG `URL` (hosts through IDNA/UTS #46, as `fetch` and every browser do), an
 * email's domain through the same host parser, phones by libphonenumber-js to E.164, IBANs whole
 * with their checksum, ids, amounts and paths whole. Two values are the same value only when
 * their canonical forms are equal: nothing is folded (a Cyrillic `а` is not an `a`, a trailing
 * dot is not nothing), so what the gate admits is exactly what the sink will reach.
 *
 * Root entry: no `node:` import. `new URL()` does the IDNA mapping (`domainToASCII`) of hosts.
 */

import type { CountryCode } from "libphonenumber-js/min";
import { parsePhoneNumberWithError } from "libphonenumber-js/min";

/** The kinds a typed sink argument can declare; `auto` infers one from the value. */
export type SinkKind =
  | "url"
  | "email"
  | "domain"
  | "host"
  | "phone"
  | "iban"
  | "id"
  | "amount"
  | "path"
  | "auto";

/** A kind a value is parsed as (every kind but `auto`). */
export type ParsedKind = Exclude<SinkKind, "auto">;

/** Every sink kind, in a stable order. */
export const sinkKinds: readonly SinkKind[] = Object.freeze([
  "url",
  "email",
  "domain",
  "host",
  "phone",
  "iban",
  "id",
  "amount",
  "path",
  "auto",
]);

/** The longest string leaf the gate parses (a browser's practical URL limit); longer is refused. */
export const maxSinkValueLength = 2048;

/** The most elements a list-valued argument may hold; more is refused. */
export const maxSinkListLength = 64;

/** One element of a sink argument, parsed. */
export interface SinkElement {
  kind: ParsedKind;
  /** The canonical form, prefixed by its comparison class: `url:`, `host:`, `email:`, `phone:`, `iban:`, `id:`, `amount:`, `path:`. */
  key: string;
  /** The element as written. */
  text: string;
  /** What the sink will reach, for a refusal's message (a URL's host, an email's domain). */
  reaches?: string;
  /**
   * For a host with a non-ASCII label (`xn--` in its canonical form): how the value wrote it,
   * `unicode`, `punycode` or `mixed`; it is vouched for only in a form trusted text used.
   */
  form?: HostForm;
}

/** How a host with a non-ASCII label is written. */
export type HostForm = "unicode" | "punycode" | "mixed";

/** How a written host spells its non-ASCII labels. */
export function hostForm(written: string): HostForm {
  const punycode = /xn--/i.test(written);
  const unicode = /[^\x00-\x7f]/.test(written);
  return punycode && unicode ? "mixed" : punycode ? "punycode" : "unicode";
}

/** The host part of a URL as written: after the scheme, before the path, after any user info. */
export function writtenUrlHost(text: string): string {
  const authority = text.replace(/^[^:]*:\/*/, "").split(/[/?#\\]/, 1)[0] ?? "";
  return authority.slice(authority.lastIndexOf("@") + 1).replace(/:[0-9]*$/, "");
}

/** The outcome of parsing one sink argument. */
export type SinkParse =
  | { ok: true; elements: SinkElement[]; inferred?: ParsedKind }
  | { ok: false; kind: ParsedKind; text: string; problem: string; inferred?: boolean };

/** Options of {@link parseSinkValue}. */
export interface SinkParseOptions {
  /** The region national phone numbers (no `+`) are read in, e.g. `GB`. Default none: they are refused. */
  phoneCountry?: CountryCode;
}

// Control characters, and characters that are invisible or reorder text: no sink value needs
// one, and parsers disagree on them (WHATWG URL drops tabs and newlines, a mail server does not).
const invisible =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u206a-\u206f\u3164\ufeff\uffa0]|\p{Variation_Selector}/u;

const atext = "A-Za-z0-9!#$%&'*+/=?^_`{|}~-";
const localPart = new RegExp(`^[${atext}]+(?:\\.[${atext}]+)*$`);
const idPattern = /^[A-Za-z0-9](?:[A-Za-z0-9._:/#-]{0,126}[A-Za-z0-9])?$/;
const ipv4Host = /^[0-9]{1,3}(?:\.[0-9]{1,3}){3}$/;

type Failure = { problem: string };
type Parsed = { key: string; reaches?: string; form?: HostForm } | Failure;

const fail = (problem: string): Failure => ({ problem });

/**
 * A host name as `new URL()` reads it (IDNA/UTS #46 mapping, `domainToASCII`, IPv4 in every
 * form to dotted decimal), or a failure. Rejects what is not a host on its own (a path,
 * user info, a port where none is allowed, percent escapes: a resolver does not decode them).
 */
export function parseHost(
  text: string,
  allowPort: boolean,
): { host: string; port?: string } | Failure {
  if (text === "") return fail("is empty");
  if (/[/?#@\\\s%]/.test(text))
    return fail("holds a character no host name has (/ ? # @ \\ % or whitespace)");
  let name = text;
  let port: string | undefined;
  const portMatch = /^(.*):([0-9]{1,5})$/.exec(text);
  if (portMatch && !text.endsWith("]")) {
    if (!allowPort) return fail("has a port; a domain has none");
    name = portMatch[1]!;
    port = String(Number(portMatch[2]));
    if (Number(port) > 65535) return fail(`has port ${port}, above 65535`);
  }
  if (name.includes(":") && !(name.startsWith("[") && name.endsWith("]")))
    return fail("has a colon that is not a port");
  let parsed: URL;
  try {
    parsed = new URL(`http://${name}/`);
  } catch {
    return fail("is not a host name the WHATWG URL parser accepts (IDNA/UTS #46)");
  }
  if (parsed.hostname === "") return fail("is not a host name");
  return port === undefined ? { host: parsed.hostname } : { host: parsed.hostname, port };
}

/** Whether a canonical host is an IP address (IPv4 dotted, or bracketed IPv6). */
export function isIpHost(host: string): boolean {
  return host.startsWith("[") || ipv4Host.test(host);
}

function parseUrl(text: string): Parsed {
  // WHATWG reads "\\" as "/" in special URLs; curl and Python's urllib read it as part of the
  // user info or host. Parsers disagree, so a URL holding one is refused.
  if (text.includes("\\"))
    return fail(
      "holds a backslash, which URL parsers disagree on (WHATWG reads it as a slash, curl and urllib do not)",
    );
  if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(text))
    return fail("is not an absolute URL (it has no scheme such as https:)");
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail("is not a URL the WHATWG URL parser accepts");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return fail(`has scheme ${url.protocol}; only http: and https: are sink URLs`);
  const reaches =
    url.username || url.password
      ? `host ${url.host} (the text before "@" is user info, not the host)`
      : `host ${url.host}`;
  return {
    key: `url:${url.href}`,
    reaches,
    ...(url.hostname.includes("xn--") ? { form: hostForm(writtenUrlHost(text)) } : {}),
  };
}

function parseEmail(text: string): Parsed {
  // `Name <address>`: the sink (a mail library) sends to the address inside the brackets.
  const display = /^[^<>@,;"]*<([^<>]*)>$/.exec(text);
  const address = display ? display[1]! : text;
  const at = address.lastIndexOf("@");
  if (at <= 0 || address.indexOf("@") !== at)
    return fail("is not one email address (it needs exactly one @ with a mailbox before it)");
  const local = address.slice(0, at);
  if (!localPart.test(local))
    return fail(
      "has a mailbox part that is not a plain RFC 5322 dot-atom of ASCII letters, digits and !#$%&'*+/=?^_`{|}~-",
    );
  const domain = parseHost(address.slice(at + 1), false);
  if ("problem" in domain) return fail(`has a domain that ${domain.problem}`);
  if (isIpHost(domain.host)) return fail("has an IP address for a domain");
  return {
    key: `email:${local.toLowerCase()}@${domain.host}`,
    reaches: `mailbox ${local.toLowerCase()} at ${domain.host}`,
    ...(domain.host.includes("xn--") ? { form: hostForm(address.slice(at + 1)) } : {}),
  };
}

function parsePhone(text: string, options: SinkParseOptions): Parsed {
  if (/[a-zA-Z]/.test(text))
    return fail("holds letters (an extension or words): a phone sink needs the number alone");
  try {
    const number = parsePhoneNumberWithError(text, {
      extract: false,
      ...(options.phoneCountry ? { defaultCountry: options.phoneCountry } : {}),
    });
    if (!number.isValid())
      return fail(
        `is ${number.number} in E.164, which is not a valid number for ${number.country ?? `country code +${number.countryCallingCode}`}`,
      );
    return { key: `phone:${number.number}`, reaches: number.number };
  } catch (error) {
    const code = (error as Error).message;
    return fail(
      code === "INVALID_COUNTRY"
        ? "has no country code (write it with +, or set the gate's phoneCountry)"
        : `is not a phone number libphonenumber-js can read (${code})`,
    );
  }
}

/** Whether an IBAN (upper case, no spaces) has a valid ISO 13616 checksum (mod 97 = 1). */
export function ibanChecksumValid(iban: string): boolean {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const character of rearranged) {
    const code = character.charCodeAt(0);
    const value = code >= 65 ? code - 55 : code - 48;
    remainder = value >= 10 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97;
  }
  return remainder === 1;
}

/** The canonical IBAN of text (spaces removed, upper case), or a failure. */
export function parseIban(text: string): { key: string } | Failure {
  const compact = text.replace(/[ \u00a0]/g, "").toUpperCase();
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(compact))
    return fail("is not an IBAN (two letters, two check digits, 11 to 30 letters or digits)");
  if (!ibanChecksumValid(compact)) return fail("has an IBAN checksum that does not hold");
  return { key: `iban:${compact}` };
}

function parseId(text: string): Parsed {
  if (!idPattern.test(text))
    return fail(
      "is not one id: ASCII letters and digits, with . _ : / # - only inside, and nothing before or after",
    );
  if (text.length < 3) return fail("is under three characters, too short to vouch for");
  return { key: `id:${text.toUpperCase()}` };
}

/** A decimal number's canonical text (no exponent, no trailing zeros), or `undefined`. */
export function decimalText(value: number): string | undefined {
  if (!Number.isFinite(value)) return undefined;
  const text = String(value);
  return /e/i.test(text) ? undefined : text === "-0" ? "0" : text;
}

/**
 * The canonical number of an amount written as text (`$1,250.00`, `1.250,00 EUR`, `450`), or a
 * failure. The last separator followed by one or two digits is the decimal point; one followed
 * by three digits is a thousands separator.
 */
export function parseAmountText(text: string): { key: string } | Failure {
  const match =
    /^(?:[$€£¥₹]|[A-Z]{3}(?= ))?\s?(-?[0-9][0-9,.' ]{0,30})\s?(?:[$€£¥₹]|[A-Z]{3})?$/i.exec(text);
  if (!match) return fail("is not an amount (a number with an optional currency sign or code)");
  const digits = match[1]!.trim().replace(/[' ]/g, "");
  // "42,50" is 42.50 in much of Europe and 4250 to a parser that drops commas: with no other
  // separator to settle it, a comma before the last one or two digits is refused as ambiguous.
  if (/^-?[0-9]+,[0-9]{1,2}$/.test(digits))
    return fail(
      "has a decimal comma with no other separator, which money parsers read two ways (42,50 is 42.50 or 4250)",
    );
  const last = Math.max(digits.lastIndexOf("."), digits.lastIndexOf(","));
  let normalized: string;
  if (last >= 0 && digits.length - last - 1 <= 2 && digits.length - last - 1 > 0)
    normalized = `${digits.slice(0, last).replace(/[.,]/g, "")}.${digits.slice(last + 1)}`;
  else if (last >= 0 && !/^-?[0-9]{1,3}(?:[.,][0-9]{3})+$/.test(digits))
    return fail("has separators that are neither thousands nor a decimal point");
  else normalized = digits.replace(/[.,]/g, "");
  const decimal = decimalText(Number(normalized));
  return decimal === undefined || !/^-?[0-9]+(?:\.[0-9]+)?$/.test(normalized)
    ? fail("is not a finite decimal amount")
    : { key: `amount:${decimal}` };
}

/** The canonical form of a path: `.` segments and repeated slashes removed; `..` refused. */
export function parsePath(text: string): { key: string } | Failure {
  if (text.includes("\\")) return fail("holds a backslash (a second separator on some systems)");
  if (/%(?:2e|2f|5c|00)/i.test(text)) return fail("holds a percent-escaped dot, slash or NUL");
  const segments = text.split("/");
  if (segments.includes("..")) return fail('has a ".." segment');
  const absolute = text.startsWith("/");
  const kept = segments.filter((segment) => segment !== "" && segment !== ".");
  if (kept.length === 0 && !absolute) return fail("is empty");
  return { key: `path:${absolute ? "/" : ""}${kept.join("/")}` };
}

function parseOne(kind: ParsedKind, text: string, options: SinkParseOptions): Parsed {
  switch (kind) {
    case "url":
      return parseUrl(text);
    case "email":
      return parseEmail(text);
    case "domain":
    case "host": {
      const host = parseHost(text, kind === "host");
      if ("problem" in host) return host;
      if (kind === "domain" && isIpHost(host.host)) return fail("is an IP address, not a domain");
      return {
        key: `host:${host.host}${host.port === undefined ? "" : `:${host.port}`}`,
        reaches: host.host,
        ...(host.host.includes("xn--") ? { form: hostForm(text) } : {}),
      };
    }
    case "phone":
      return parsePhone(text, options);
    case "iban":
      return parseIban(text);
    case "id":
      return parseId(text);
    case "amount":
      return parseAmountText(text);
    case "path":
      return parsePath(text);
  }
}

/** What `auto` reads a value as (the refusal says so). */
export function inferKind(value: string | number): ParsedKind {
  if (typeof value === "number") return "amount";
  const text = value.trim();
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(text)) return "url";
  if (/[@＠]/.test(text)) return "email";
  if (/^(?:\+|00|\()[0-9 ().-]{6,}$/.test(text) || /^[0-9]{2,5}[ .-][0-9 .-]{5,}$/.test(text))
    return "phone";
  if (/^[A-Za-z]{2}[0-9]{2}(?: ?[A-Za-z0-9]){11,34}$/.test(text)) return "iban";
  if (/^(?:[$€£¥₹]|[A-Z]{3} )|[$€£¥₹]$|^-?[0-9]{1,3}(?:[,.][0-9]{3})*[.,][0-9]{1,2}$/.test(text))
    return "amount";
  if (/^(?:\/|\.\.?\/|~\/)/.test(text)) return "path";
  if (/^[^\s,;|]+\.[^\s,;|]*[^\s,;|0-9.][^\s,;|]*$/.test(text) && !/[/?#]/.test(text))
    return /:[0-9]{1,5}$/.test(text) ? "host" : "domain";
  return "id";
}

/** How a string of a kind splits into list elements (a comma-separated list of addresses). */
const separators: Record<ParsedKind, RegExp | undefined> = {
  url: / +/,
  email: /[,;|]+/,
  domain: /[\s,;|]+/,
  host: /[\s,;|]+/,
  id: /[\s,;|]+/,
  phone: /[,;|]+/,
  iban: /[,;|]+/,
  amount: undefined,
  path: undefined,
};

/**
 * Parses a sink argument as `kind`: every string or number leaf (arrays and objects at any
 * depth), each string split into list elements at the kind's separators. Every element must
 * parse; the first that does not gives a failure that says why. An empty string or list has no
 * elements (nothing to steer).
 *
 * @example
 * parseSinkValue("url", "https://reports.acme.example}@evil.example/upload");
 * // { ok: true, elements: [{ kind: "url", key: "url:https://reports.acme.example%7D@evil.example/upload", reaches: "host evil.example (…user info…)" }] }
 */
export function parseSinkValue(
  kind: SinkKind,
  value: unknown,
  options: SinkParseOptions = {},
): SinkParse {
  const elements: SinkElement[] = [];
  const stack: unknown[] = [value];
  let inferred: ParsedKind | undefined;
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop();
    if (item === null || item === undefined) continue;
    if (typeof item === "object") {
      if (seen.has(item)) continue;
      seen.add(item);
      const children = Array.isArray(item) ? item : Object.values(item);
      for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]);
      continue;
    }
    const leafKind: ParsedKind =
      kind === "auto" && (typeof item === "string" || typeof item === "number")
        ? inferKind(item)
        : kind === "auto"
          ? "id"
          : kind;
    if (kind === "auto") inferred = leafKind;
    const failed = (text: string, problem: string): SinkParse => ({
      ok: false,
      kind: leafKind,
      text,
      problem,
      ...(kind === "auto" ? { inferred: true } : {}),
    });
    if (typeof item === "number") {
      if (leafKind !== "amount" && leafKind !== "id" && leafKind !== "phone")
        return failed(String(item), `is a number, not ${article(leafKind)}`);
      const text = decimalText(item);
      if (text === undefined) return failed(String(item), "is not a finite number");
      const parsed =
        leafKind === "amount" ? { key: `amount:${text}` } : parseOne(leafKind, text, options);
      if ("problem" in parsed) return failed(text, parsed.problem);
      elements.push({ kind: leafKind, text, ...parsed });
      continue;
    }
    if (typeof item !== "string")
      return failed(String(item), `is a ${typeof item}, not ${article(leafKind)}`);
    if (item.length > maxSinkValueLength)
      return failed(
        `${item.slice(0, 40)}…`,
        `is ${item.length} characters long; the gate parses at most ${maxSinkValueLength} per value (longer values are refused, not truncated)`,
      );
    if (invisible.test(item))
      return failed(
        item,
        "holds a control, invisible or bidi character, which parsers disagree on",
      );
    const separator = separators[leafKind];
    const parts = (separator ? item.split(separator) : [item])
      // ASCII spaces only: String.prototype.trim also drops U+3000 and other spaces a URL
      // parser keeps (it would percent-encode them into the path).
      .map((part) => part.replace(/^[ \t\n\r\f]+|[ \t\n\r\f]+$/g, ""))
      .filter((part) => part !== "");
    if (parts.length > maxSinkListLength)
      return failed(
        `${item.slice(0, 40)}…`,
        `lists ${parts.length} values; the gate reads at most ${maxSinkListLength}`,
      );
    for (const part of parts) {
      // A word of the task is a token too: `auto` vouches for an id only when it holds a digit,
      // so "accountant" in a `to` read as `auto` is not admitted because the task says
      // "my accountant" (a mail server would deliver it to a local mailbox).
      if (kind === "auto" && leafKind === "id" && !/[0-9]/.test(part))
        return failed(
          part,
          "has no digit; auto reads it as an id, and reads words as ids only when the sink declares the kind",
        );
      const parsed = parseOne(leafKind, part, options);
      if ("problem" in parsed) return failed(part, parsed.problem);
      elements.push({ kind: leafKind, text: part, ...parsed });
      if (elements.length > maxSinkListLength)
        return failed(
          part,
          `is one of more than ${maxSinkListLength} values; the gate reads at most that many`,
        );
    }
  }
  // Nothing to vouch for is not "every element vouched": a sink may read an empty value as
  // "use the default", so an empty string, list or object is refused.
  if (elements.length === 0)
    return {
      ok: false,
      kind: kind === "auto" ? (inferred ?? "id") : kind,
      text: "",
      problem:
        "is empty: there is no value to check, and a sink may read an empty one as its default",
      ...(kind === "auto" ? { inferred: true } : {}),
    };
  return inferred === undefined ? { ok: true, elements } : { ok: true, elements, inferred };
}

/** "an email address", "a URL", ... for messages. */
export function article(kind: ParsedKind): string {
  switch (kind) {
    case "url":
      return "a URL";
    case "email":
      return "an email address";
    case "domain":
      return "a domain";
    case "host":
      return "a host";
    case "phone":
      return "a phone number";
    case "iban":
      return "an IBAN";
    case "id":
      return "an id";
    case "amount":
      return "an amount";
    case "path":
      return "a path";
  }
}
