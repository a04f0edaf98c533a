import type { Detector, DetectorMatch } from "../detector.js";
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
