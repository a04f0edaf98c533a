import { textBefore } from "../context.js";
import type { Detector, DetectorMatch } from "../detector.js";

// Area, group and serial with the same separator twice. Bare nine-digit runs are left out:
// they are far more often order numbers and ZIP+4 codes than SSNs.
const CANDIDATE = /(?<![\w.\-/])(\d{3})([ .-])(\d{2})\2(\d{4})(?![\w-]|\.\d)/g;
// Nine digits in a row count only right after a word for an SSN.
const BARE = /(?<![\w.\-/])(\d{3})(\d{2})(\d{4})(?![\w-]|\.\d)/g;
const SSN_CONTEXT =
  /\b(?:ssn|ss#|ss no|social security(?: number| no)?|soc\.? sec\.?(?: no)?|sozialversicherungsnummer|tin|itin)(?:\s+(?:is|was|of))?[\s:=#."'-]*$/;

/** Whether area, group and serial are in the ranges the SSA issues. */
export function isValidSsn(area: string, group: string, serial: string): boolean {
  const areaNumber = Number(area);
  if (areaNumber === 0 || areaNumber === 666 || areaNumber >= 900) return false;
  if (group === "00" || serial === "0000") return false;
  return true;
}

/**
 * Finds US social security numbers written `AAA-GG-SSSS` (or with dots or spaces), in the
 * ranges the SSA issues: no area 000, 666 or 900-999, no group 00, no serial 0000.
 */
export function usSsnDetector(): Detector {
  return {
    type: "US_SSN",
    name: "us-ssn",
    priority: 35,
    maxLength: 16,
    find(text) {
      const matches: DetectorMatch[] = [];
      CANDIDATE.lastIndex = 0;
      for (let match = CANDIDATE.exec(text); match !== null; match = CANDIDATE.exec(text)) {
        if (isValidSsn(match[1]!, match[3]!, match[4]!)) {
          matches.push({ start: match.index, end: match.index + match[0].length });
        }
      }
      BARE.lastIndex = 0;
      for (let match = BARE.exec(text); match !== null; match = BARE.exec(text)) {
        if (
          isValidSsn(match[1]!, match[2]!, match[3]!) &&
          SSN_CONTEXT.test(textBefore(text, match.index, 32))
        )
          matches.push({ start: match.index, end: match.index + 9, rule: "labelled" });
      }
      return matches;
    },
  };
}
