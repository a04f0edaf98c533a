import { textBefore } from "../context.js";
import type { Detector, DetectorMatch } from "../detector.js";

// Area, group and serial with the same separator twice. Bare nine-digit runs are left out:
// they are far more often order numbers and ZIP+4 codes than SSNs.
const CANDIDATE = /(?<![\w.\-/])(\d{3})([ .-])(\d{2})\2(\d{4})(?![\w-]|\.\d)/g;
// Nine digits in a row count only right after a word for an SSN.
const BARE = /(?<![\w.\-/])(\d{3})(\d{2})(\d{4})(?![\w-]|\.\d)/g;
const SSN_CONTEXT =
  /\b(?:ssn|ss#|ss no|social security(?: number| no)?|soc\.? sec\.?(?: no)?|sozialversicherungsnummer|tin|itin)(?:\s+(?:is|was|of))?[\s:=#."'-]*$/;

const SSN_WORD =
  /\b(?:ssns?|ss#|social security|soc\.? sec|sozialversicherungsnummer|tins?|itins?|taxpayer)\b/;
const SAME_SHAPE_BEFORE =
  /\d{3}[ .-]\d{2}[ .-]\d{4}(?:,[ ]?|;[ ]?|[ ](?:and|or|&)[ ]|[ ]?\/[ ]?|[ ]?\|[ ]?)$/;
const SAME_SHAPE_AFTER =
  /^(?:,[ ]?|;[ ]?|[ ](?:and|or|&)[ ]|[ ]?\/[ ]?|[ ]?\|[ ]?)\d{3}[ .-]\d{2}[ .-]\d{4}/;

/** Whether the number at `[start, end)` has a neighbour of the same shape, one separator away. */
function inNumberList(text: string, start: number, end: number): boolean {
  return (
    SAME_SHAPE_BEFORE.test(text.slice(Math.max(0, start - 18), start)) ||
    SAME_SHAPE_AFTER.test(text.slice(end, end + 18))
  );
}

/** Where the list holding the number at `start` begins (walking back over its items). */
function listStart(text: string, start: number): number {
  let at = start;
  for (let hops = 0; hops < 64; hops++) {
    const before = text.slice(Math.max(0, at - 18), at);
    const match = SAME_SHAPE_BEFORE.exec(before);
    if (match === null) break;
    at = at - before.length + match.index;
  }
  return at;
}

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
        if (!isValidSsn(match[1]!, match[3]!, match[4]!)) continue;
        const start = match.index;
        const end = start + match[0].length;
        // Taken with no cue at all; but one of a list of numbers of the same shape ("part
        // numbers 123-45-6789, 234-56-7890 and …") is a catalogue, not a person, unless a word
        // for SSNs stands before the list.
        let score = 0.9;
        if (inNumberList(text, start, end)) {
          score = SSN_WORD.test(textBefore(text, listStart(text, start), 64)) ? 0.9 : 0.3;
        }
        matches.push(
          score < 0.5 ? { start, end, score, rule: "number-list" } : { start, end, score },
        );
      }
      BARE.lastIndex = 0;
      for (let match = BARE.exec(text); match !== null; match = BARE.exec(text)) {
        if (!isValidSsn(match[1]!, match[2]!, match[3]!)) continue;
        // Nine digits in a row are order numbers and ZIP+4 codes far more often: without a
        // word for an SSN right before them they score below the default threshold.
        const labelled = SSN_CONTEXT.test(textBefore(text, match.index, 32));
        matches.push({
          start: match.index,
          end: match.index + 9,
          rule: labelled ? "labelled" : "bare",
          score: labelled ? 0.95 : 0.25,
        });
      }
      return matches;
    },
  };
}
