import type { Detector, DetectorMatch } from "../detector.js";
import { isAlphanumeric } from "./char-classes.js";

const MAX_LOCAL = 64;
const MAX_DOMAIN = 253;

function isLocalCode(code: number): boolean {
  // RFC 5322 atext minus the rarely used characters that also end sentences or quote.
  return (
    isAlphanumeric(code) ||
    code === 46 || // .
    code === 95 || // _
    code === 37 || // %
    code === 43 || // +
    code === 45 || // -
    code === 39 || // '
    code > 127
  );
}

function isDomainCode(code: number): boolean {
  return isAlphanumeric(code) || code === 46 || code === 45 || code > 127;
}

/**
 * Finds email addresses by looking outward from each `@`: linear in the text, with the
 * local part capped at 64 characters and the domain at 253, and a domain that must end in
 * a plausible top-level label (two letters or more, or an IDNA `xn--` label).
 */
export function emailDetector(): Detector {
  return {
    type: "EMAIL",
    name: "email",
    priority: 40,
    maxLength: MAX_LOCAL + MAX_DOMAIN + 1,
    find(text) {
      const matches: DetectorMatch[] = [];
      let at = text.indexOf("@");
      let lastEnd = 0;
      while (at !== -1) {
        let start = at;
        const floor = Math.max(lastEnd, at - MAX_LOCAL);
        while (start > floor && isLocalCode(text.charCodeAt(start - 1))) start--;
        while (start < at && (text.charCodeAt(start) === 46 || text.charCodeAt(start) === 39))
          start++;
        // A quoted local part: "john smith"@example.com (RFC 5322), on one line.
        if (start === at && text.charCodeAt(at - 1) === 34) {
          const open = text.lastIndexOf('"', at - 2);
          if (open >= Math.max(lastEnd, at - MAX_LOCAL) && !text.slice(open, at).includes("\n"))
            start = open;
        }
        let end = at + 1;
        const ceiling = Math.min(text.length, at + 1 + MAX_DOMAIN);
        while (end < ceiling && isDomainCode(text.charCodeAt(end))) end++;
        // Trim trailing dots and hyphens ("mail me at a@b.com.").
        while (end > at + 1 && (text.charCodeAt(end - 1) === 46 || text.charCodeAt(end - 1) === 45))
          end--;
        if (
          start < at &&
          end > at + 1 &&
          validDomain(text, at + 1, end) &&
          !inUrlAuthority(text, start)
        ) {
          matches.push({ start, end });
          lastEnd = end;
        }
        at = text.indexOf("@", at + 1);
      }
      if (SPELLED_HINT.test(text)) findSpelled(text, matches);
      return matches;
    },
  };
}

// "jroe at acme dot example", "maria arroba correo punto es", "bram84 AT posta DOT com",
// "thibault84 at posta.nl". The domain must end in a top-level domain people write (a list,
// not any word), and the bare "at domain.tld" form, which prose also has ("look at acme.com"),
// needs a local part no sentence would put there (a digit, a dot, an underscore) to score above
// the default threshold.
const SPELLED_HINT =
  / (?:at|AT|arroba|ARROBA|chez|snabel-a|małpa) |@[^\s@]{1,64} (?:dot|DOT|punto|PUNTO|point|POINT|punkt|PUNKT|kropka|KROPKA|punt|PUNT) /;
const AT_WORD = "(?:at|AT|arroba|ARROBA|chez|snabel-a|małpa)";
const DOT_WORD = "(?:dot|DOT|punto|PUNTO|point|POINT|punkt|PUNKT|kropka|KROPKA|punt|PUNT)";
const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
// Found from each " at " (one scan for the rare word), then matched sticky from the start of
// the local part read back from there: a pattern that starts at every letter would cost a
// regex attempt per character of prose.
// "@" too: the normalised view has already read "[at]" and "(at)" as "@", and "a [at] b dot
// com" mixes a bracketed at with a spelled dot.
const AT_SCAN = new RegExp(`[ ]${AT_WORD}[ ]|@`, "g");
const SPELLED = new RegExp(
  `([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})(?:[ ]${AT_WORD}[ ]|@)(${LABEL}(?:(?:[ ]${DOT_WORD}[ ]|\\.)${LABEL}){0,3})(?:[ ]${DOT_WORD}[ ]|\\.)([A-Za-z]{2,12})(?![A-Za-z0-9-])`,
  "y",
);
const SPELLED_DOT = new RegExp(`[ ]${DOT_WORD}[ ]`);
const TOP_LEVEL_DOMAINS = new Set(
  `com org net edu gov mil int info biz io co ai app dev example test invalid eu uk de fr es it
  nl se pl jp cn kr us ca au nz ch at be dk no fi ie pt gr cz sk hu ro bg hr si lt lv ee is lu
  mx br ar cl in ru ua tr za sg hk tw me tv cc name pro mobi email online shop store cloud`.split(
    /\s+/,
  ),
);
// Words a sentence puts before "at": "look at acme.com" is no address.
const PROSE_BEFORE_AT = new Set(
  `look looking looked me us him her them it this that is are was were be been am meet meeting
  arrive arrived arriving stay stayed live lives lived work works worked found available online
  here there located hosted published posted shop buy bought read visit see check reach write
  mail email contact you we they i he she one everyone someone anyone all both him hers ours
  up down out back in on off over aim aimed aiming good bad great best better stop stopped`.split(
    /\s+/,
  ),
);

/** Appends spelled-out emails to `matches` (those overlapping a real one are left to it). */
function findSpelled(text: string, matches: DetectorMatch[]): void {
  AT_SCAN.lastIndex = 0;
  for (let at = AT_SCAN.exec(text); at !== null; at = AT_SCAN.exec(text)) {
    let from = at.index;
    while (from > 0 && at.index - from < 64 && isSpelledLocal(text.charCodeAt(from - 1))) from--;
    if (from === at.index) continue;
    SPELLED.lastIndex = from;
    const match = SPELLED.exec(text);
    if (match === null) continue;
    AT_SCAN.lastIndex = Math.max(AT_SCAN.lastIndex, match.index + match[0].length);
    const start = match.index;
    const end = start + match[0].length;
    if (start > 0 && text.charCodeAt(start - 1) === 64) continue;
    const tld = match[3]!.toLowerCase();
    if (!TOP_LEVEL_DOMAINS.has(tld)) continue;
    const local = match[1]!;
    const spelledDot = SPELLED_DOT.test(match[0]);
    let score: number;
    if (PROSE_BEFORE_AT.has(local.toLowerCase())) score = spelledDot ? 0.45 : 0.2;
    else if (spelledDot || /[._\d%+-]/.test(local)) score = 0.9;
    else score = 0.6;
    if (matches.some((found) => found.start < end && start < found.end)) continue;
    matches.push({ start, end, rule: "spelled-out", score });
  }
}

function isSpelledLocal(code: number): boolean {
  return (
    isAlphanumeric(code) || code === 46 || code === 95 || code === 37 || code === 43 || code === 45
  );
}

/** Whether `user@host` at `start` is the authority of a URL (`https://user:pw@host`), not an email. */
function inUrlAuthority(text: string, start: number): boolean {
  const before = text.charCodeAt(start - 1);
  if (before !== 58 && before !== 47) return false; // ':' or '/'
  const floor = Math.max(0, start - 300);
  for (let index = start - 1; index > floor; index--) {
    const code = text.charCodeAt(index);
    if (code === 32 || code === 10 || code === 9 || code === 34 || code === 39) return false;
    if (code === 47 && text.charCodeAt(index - 1) === 47 && text.charCodeAt(index - 2) === 58)
      return true;
  }
  return false;
}

function validDomain(text: string, start: number, end: number): boolean {
  let lastDot = end - 1;
  while (lastDot > start && text.charCodeAt(lastDot) !== 46) lastDot--;
  if (lastDot <= start || lastDot >= end - 1) return false;
  if (text.charCodeAt(start) === 46 || text.charCodeAt(start) === 45) return false;
  // No empty labels ("a@b..com"); bounded to the domain so the scan stays linear.
  for (let index = start + 1; index < end; index++) {
    if (text.charCodeAt(index) === 46 && text.charCodeAt(index - 1) === 46) return false;
  }
  const tld = text.slice(lastDot + 1, end);
  if (tld.startsWith("xn--")) return tld.length > 4;
  if (tld.length < 2 || tld.length > 63) return false;
  for (let index = 0; index < tld.length; index++) {
    const code = tld.charCodeAt(index);
    const letter = (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code > 127;
    if (!letter) return false;
  }
  return true;
}
