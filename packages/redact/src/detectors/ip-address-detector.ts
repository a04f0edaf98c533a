import { keyBefore, wordBefore } from "../context.js";
import type { Detector, DetectorMatch } from "../detector.js";
import { NOT_NAME_WORDS } from "../lexicon/name-cues.js";
import { BRAND_WORDS, FUNCTION_WORDS_I18N } from "../lexicon/names-by-language.js";
import { isHexCode, isWordCode } from "./char-classes.js";

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
// Not inside a word or a longer dotted number; a trailing sentence dot is fine.
const IPV4 = new RegExp(`(?<![\\w.])${OCTET}(?:\\.${OCTET}){3}(?!\\w)`, "g");
const MAX_V6 = 45;

function isV6Code(code: number): boolean {
  return isHexCode(code) || code === 58 || code === 46;
}

/** Whether `text` is an IPv6 address (RFC 4291 text forms, with an optional trailing IPv4). */
export function isIpv6(text: string): boolean {
  const double = text.indexOf("::");
  if (double !== -1 && text.indexOf("::", double + 1) !== -1) return false;
  const groups = (part: string): number => {
    if (part === "") return 0;
    const pieces = part.split(":");
    let count = 0;
    for (let index = 0; index < pieces.length; index++) {
      const piece = pieces[index]!;
      if (index === pieces.length - 1 && piece.includes(".")) {
        IPV4.lastIndex = 0;
        const match = IPV4.exec(piece);
        if (match === null || match[0].length !== piece.length) return -1;
        count += 2;
      } else {
        if (piece.length < 1 || piece.length > 4 || !/^[0-9A-Fa-f]+$/.test(piece)) return -1;
        count += 1;
      }
    }
    return count;
  };
  if (double === -1) return groups(text) === 8;
  const left = text.slice(0, double);
  const right = text.slice(double + 2);
  if (left.includes(".")) return false;
  const leftCount = groups(left);
  const rightCount = groups(right);
  return leftCount >= 0 && rightCount >= 0 && leftCount + rightCount <= 7;
}

// Keys and words that say "this dotted number is a version", and those that say "address".
const VERSION_KEY =
  /(?:^|[^a-z])(?:version|ver|vers|build|firmware|fw|release|rev|revision|sdk|bios|kernel|driver|agent|app|client_version|user-agent|useragent|ua)$/;
const ADDRESS_KEY =
  /(?:^|[^a-z])(?:ip|ips|ipv4|addr|address|host|hostname|client|server|remote|peer|src|dst|source|destination|gateway|gw|dns|nameserver|proxy|via|from|to|origin|forwarded|x-forwarded-for|x-real-ip|endpoint|node|subnet|route|nexthop)$/;
const VERSION_WORD =
  /^(?:version|ver|v|build|firmware|fw|release|rel|rev|revision|update|upgrade|upgraded|patch|sdk|bios|kernel|driver|agent|edition|image|package|pkg|plugin|chrome|chromium|firefox|edge|safari|windows|android|ios|macos|ubuntu|debian|node|python|java|jdk|release-candidate)$/i;
const ADDRESS_WORD =
  /^(?:ip|ips|ipv4|address|addr|host|from|to|server|client|remote|peer|gateway|gw|dns|proxy|via|origin|node|nodes|router|subnet|ping|ssh|connect|connected|connecting|login|logged|blocked|banned|allow|deny|source|src|dst|destination|at|on|by|and|or|is|was|with)$/i;

/**
 * Whether a dotted quad at `[start, end)` reads as a version number in its context: right
 * after `v` or `/` (`v4.6.5.67`, `acme-cli/8.20.11.160`), under a `version`/`build` key, or
 * after a version word or a kind of software (`Firmware 6.11.14.157`, `release 2.14.0.1`,
 * `Agent 4.6.5.67`).
 * Address words and keys (`ip`, `host`, `from`, `client_ip`) win over a product name.
 */
export function isVersionContext(text: string, start: number): boolean {
  const before = text.charCodeAt(start - 1);
  const beforeThat = text.charCodeAt(start - 2);
  const wordChar = (code: number) =>
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 45 ||
    code === 95;
  // "v4.6.5.67", "V10.2.0.1", not "dev10.0.0.1"'s "v" inside a word.
  if ((before === 118 || before === 86) && !wordChar(beforeThat)) return true;
  // "acme-cli/8.20.11.160" (product/version), not "http://10.0.0.1" or "10.0.0.0/8".
  if (before === 47 && wordChar(beforeThat)) return true;
  const key = keyBefore(text, start);
  if (key !== undefined) {
    if (ADDRESS_KEY.test(key)) return false;
    if (VERSION_KEY.test(key)) return true;
  }
  const word = wordBefore(text, start);
  if (word === "") return false;
  if (ADDRESS_WORD.test(word)) return false;
  if (VERSION_WORD.test(word)) return true;
  // A product name right before it ("Orchid Sync 4.2.1.9", "Teams 1.6.0.2"): a brand word, or
  // a capitalised word that is no common word ("Refund 203.0.113.5" stays an address), one
  // space, the quad, outside the private, loopback and unspecified ranges where a bare
  // address after a device's name ("Printer 192.168.1.20") is the likelier reading.
  const lowerWord = word.toLowerCase();
  if (
    before === 32 &&
    /^[A-Z][a-z]{1,20}$/.test(word) &&
    (BRAND_WORDS.has(lowerWord) ||
      !(NOT_NAME_WORDS.has(lowerWord) || FUNCTION_WORDS_I18N.has(lowerWord))) &&
    !/^(?:0|10|127)\.|^192\.168\.|^172\.(?:1[6-9]|2\d|3[01])\.|^169\.254\./.test(
      text.slice(start, start + 8),
    )
  )
    return true;
  return false;
}

/**
 * Finds IPv4 addresses (each octet 0-255, not inside a longer dotted number) and IPv6
 * addresses in full, compressed and IPv4-suffixed forms with an optional zone (`fe80::1%eth0`).
 * IPv6 candidates are grown around each colon, so text without colons costs one `indexOf`.
 */
export function ipAddressDetector(): Detector {
  return {
    type: "IP_ADDRESS",
    name: "ip-address",
    priority: 30,
    maxLength: 64,
    find(text) {
      const matches: DetectorMatch[] = [];
      IPV4.lastIndex = 0;
      for (let match = IPV4.exec(text); match !== null; match = IPV4.exec(text)) {
        if (isVersionContext(text, match.index)) continue;
        matches.push({ start: match.index, end: match.index + match[0].length, rule: "ipv4" });
      }
      let colon = text.indexOf(":");
      let scannedTo = 0;
      while (colon !== -1) {
        if (colon < scannedTo) {
          colon = text.indexOf(":", scannedTo);
          continue;
        }
        let start = colon;
        const floor = Math.max(scannedTo, colon - MAX_V6);
        while (start > floor && isV6Code(text.charCodeAt(start - 1))) start--;
        let end = colon + 1;
        const ceiling = Math.min(text.length, colon + MAX_V6);
        while (end < ceiling && isV6Code(text.charCodeAt(end))) end++;
        scannedTo = end;
        // Trim trailing dots (end of sentence) but keep "::".
        while (end > start && text.charCodeAt(end - 1) === 46) end--;
        // Leading dots belong to something else ("v1.2::"); a lone colon is punctuation
        // ("ip:2001:db8::1"), a double one is part of the address ("::1").
        while (start < end && text.charCodeAt(start) === 46) start++;
        if (text.charCodeAt(start) === 58 && text.charCodeAt(start + 1) !== 58) start++;
        if (text.charCodeAt(end - 1) === 58 && text.charCodeAt(end - 2) !== 58) end--;
        const before = text.charCodeAt(start - 1);
        let after = end;
        if (text.charCodeAt(after) === 37) {
          // Zone index: %eth0
          let zoneEnd = after + 1;
          while (
            zoneEnd < text.length &&
            zoneEnd - after < 16 &&
            isWordCode(text.charCodeAt(zoneEnd))
          )
            zoneEnd++;
          if (zoneEnd > after + 1) after = zoneEnd;
        }
        // An address has "::" or seven colons: a lone colon ("Status:", "09:12") is not one.
        const nextColon = text.indexOf(":", colon + 1);
        if (nextColon === -1 || nextColon >= end) {
          colon = text.indexOf(":", Math.max(colon + 1, scannedTo));
          continue;
        }
        let candidate = text.slice(start, end);
        // An address followed or preceded by punctuation colons ("::1:", ":::1").
        if (!isIpv6(candidate) && candidate.endsWith(":::")) candidate = candidate.slice(0, -1);
        if (!isIpv6(candidate) && candidate.startsWith(":::")) {
          candidate = candidate.slice(1);
          start++;
        }
        if (after === end) after = start + candidate.length;
        end = start + candidate.length;
        const boundaryBefore = start === 0 || !isWordCode(before);
        const boundaryAfter = after >= text.length || !isWordCode(text.charCodeAt(after));
        if (
          boundaryBefore &&
          boundaryAfter &&
          (candidate.includes("::") || candidate.split(":").length === 8) &&
          /[0-9A-Fa-f]/.test(candidate) &&
          isIpv6(candidate)
        ) {
          matches.push({ start, end: after, rule: "ipv6" });
          scannedTo = after;
        }
        colon = text.indexOf(":", Math.max(colon + 1, scannedTo));
      }
      return matches;
    },
  };
}
