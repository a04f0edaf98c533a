/**
 * The canonical values trusted text carries (the task, run attributes, a trusted tool's output),
 * found with the same parsers {@link parseSinkValue} uses on sink arguments, so a sink value is
 * vouched for only when its canonical form equals one of them exactly.
 */
import {
  hostForm,
  ibanChecksumValid,
  parseAmountText,
  parseHost,
  parsePath,
  parseSinkValue,
  type SinkParseOptions,
  writtenUrlHost,
} from "./sink-values.js";

/** A canonical value found in text, with the text it was read from. */
export interface FoundValue {
  key: string;
  /** The text as written (for the model-written check, which compares loose forms). */
  raw: string;
}

const trailing = /[.,;:!?)\]}>'"»”’]+$/;

/** Candidate spellings of a token: as written and with trailing punctuation trimmed. */
function trimmed(token: string): string[] {
  const short = token.replace(trailing, "");
  return short === token || short === "" ? [token] : [token, short];
}

const urlCandidate = /[a-z][a-z0-9+.-]{0,20}:\/\/[^\s<>"'`]{1,2048}/gi;
const emailCandidate = /[^\s<>()[\]{},;:"'`@]{1,64}@[^\s<>()[\]{},;:"'`@]{1,255}/g;
// A host name: labels of letters, digits, marks and hyphens, joined by a dot or a full-width
// or ideographic full stop (the URL parser maps those to "."), optionally with a port.
const hostCandidate =
  /[\p{L}\p{N}\p{M}](?:[\p{L}\p{N}\p{M}_-]{0,62})(?:[.\u3002\uff0e\uff61][\p{L}\p{N}\p{M}_-]{1,63}){1,16}(?::[0-9]{1,5})?/gu;
const phoneCandidate =
  /(?:\+[0-9]{1,3}[ .-]?|\b00[0-9]{1,3}[ .-]?)?(?:\([0-9]{1,5}\)[ .-]?)?[0-9][0-9 .\-/]{4,18}[0-9]/g;
/** Phone candidates parsed per text at most (each parse costs about 0.1 ms); the rest vouch for nothing. */
const maxPhoneCandidates = 256;
const ibanCandidate = /\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,34}/gi;
const amountCandidate =
  /(?:[$€£¥₹] ?)?-?[0-9]{1,3}(?:[,' ][0-9]{3})+(?:[.,][0-9]{1,2})?|(?:[$€£¥₹] ?)?-?[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]{1,2}|(?:[$€£¥₹] ?)?-?[0-9]+(?:[.,][0-9]{1,2})?(?![0-9])/g;
const tokenSplit = /[\s,;()[\]{}<>"'`=|]+/;
const subTokenSplit = /[\s,;()[\]{}<>"'`=|:/#]+/;

/**
 * The canonical values in text: URLs (and their hosts), email addresses (and their domains),
 * bare host names, phone numbers (international, or national with `phoneCountry`), IBANs with a
 * valid checksum, ids (tokens), amounts (numbers) and paths.
 *
 * @example
 * trustedValuesOf("Post the report to https://reports.acme.example/upload").map((value) => value.key);
 * // ["url:https://reports.acme.example/upload", "host:reports.acme.example", ...]
 */
export function trustedValuesOf(text: string, options: SinkParseOptions = {}): FoundValue[] {
  const found = new Map<string, FoundValue>();
  const add = (key: string, raw: string, host?: string) => {
    if (!found.has(key)) found.set(key, { key, raw });
    // A non-ASCII label is trusted only in the form (Unicode or punycode) this text wrote it.
    if (host !== undefined && key.includes("xn--")) {
      const form = `form:${key}:${hostForm(host)}`;
      if (!found.has(form)) found.set(form, { key: form, raw });
    }
  };
  for (const match of text.matchAll(urlCandidate)) {
    for (const candidate of trimmed(match[0])) {
      const parsed = parseSinkValue("url", candidate, options);
      if (!parsed.ok) continue;
      for (const element of parsed.elements) add(element.key, candidate, writtenUrlHost(candidate));
      try {
        const url = new URL(candidate);
        const written = writtenUrlHost(candidate);
        add(`host:${url.hostname}`, written, written);
        if (url.port !== "") add(`host:${url.hostname}:${url.port}`, written, written);
      } catch {
        // parseSinkValue accepted it, so the URL parser does too.
      }
    }
  }
  for (const match of text.matchAll(emailCandidate)) {
    for (const candidate of trimmed(match[0])) {
      const parsed = parseSinkValue("email", candidate, options);
      if (!parsed.ok) continue;
      const domain = candidate.slice(candidate.lastIndexOf("@") + 1).replace(/>$/, "");
      for (const element of parsed.elements) {
        add(element.key, candidate, domain);
        add(`host:${element.key.slice(element.key.lastIndexOf("@") + 1)}`, domain, domain);
      }
    }
  }
  for (const match of text.matchAll(hostCandidate)) {
    const candidate = match[0];
    const name = candidate.replace(/:[0-9]+$/, "");
    const labels = name.split(/[.\u3002\uff0e\uff61]/);
    // "89.99" is an amount, not the IPv4 address 89.0.0.99 the URL parser would make of it:
    // a bare host needs a letter in its last label, or four decimal parts.
    if (!/\p{L}/u.test(labels[labels.length - 1]!) && !/^[0-9]{1,3}(?:\.[0-9]{1,3}){3}$/.test(name))
      continue;
    const host = parseHost(candidate, true);
    if ("problem" in host) continue;
    add(`host:${host.host}`, candidate, name);
    if (host.port !== undefined) add(`host:${host.host}:${host.port}`, candidate, name);
  }
  // Phone numbers: bounded candidates, each parsed whole, at most 256 per text, not
  // libphonenumber-js's text finder, which takes seconds on 100 KB of digits and spaces.
  let phoneParses = 0;
  for (const match of text.matchAll(phoneCandidate)) {
    if (match[0].replace(/[^0-9]/g, "").length < 7) continue;
    if (++phoneParses > maxPhoneCandidates) break;
    const parsed = parseSinkValue("phone", match[0], options);
    if (parsed.ok) for (const element of parsed.elements) add(element.key, match[0]);
  }
  for (const match of text.matchAll(ibanCandidate)) {
    // The pattern may run into the next word: every length whose checksum holds is an IBAN.
    const compact = match[0].replace(/ /g, "").toUpperCase();
    for (let end = compact.length; end >= 15; end--) {
      const candidate = compact.slice(0, end);
      if (ibanChecksumValid(candidate)) add(`iban:${candidate}`, match[0]);
    }
  }
  for (const match of text.matchAll(amountCandidate)) {
    // A hyphen right after a letter or a digit joins a word ("A-55120", "2026-11-30"): what
    // follows is part of that word, not a negative amount.
    const before = text[(match.index ?? 0) - 1] ?? "";
    const written = match[0].replace(/^[$€£¥₹] ?/, "");
    if (written.startsWith("-") && /[\p{L}\p{N}]/u.test(before)) continue;
    const parsed = parseAmountText(written);
    if (!("problem" in parsed)) add(parsed.key, match[0]);
  }
  for (const token of text.split(tokenSplit)) {
    if (token === "") continue;
    for (const piece of new Set([token, ...token.split(subTokenSplit)])) {
      const core = piece.replace(/^[^A-Za-z0-9/.~]+/, "").replace(/[^A-Za-z0-9]+$/, "");
      if (core.length >= 3 && /^[A-Za-z0-9](?:[A-Za-z0-9._:/#-]{0,126}[A-Za-z0-9])?$/.test(core))
        add(`id:${core.toUpperCase()}`, core);
      if (/^(?:\/|\.\/|~\/)/.test(core) || (piece.startsWith("/") && core.length > 1)) {
        const path = parsePath(piece.replace(/[.,;:!?]+$/, ""));
        if (!("problem" in path)) add(path.key, piece);
      }
    }
  }
  return [...found.values()];
}
