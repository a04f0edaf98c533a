import type { DetectorMatch } from "../detector.js";

/**
 * The find loop of a candidate detector: runs a global `pattern` over the text and asks
 * `measure` where each candidate's accepted span ends (its length from the candidate's start),
 * or `undefined` to reject it. The spans are `[match.index, match.index + length)`.
 *
 * Where the next candidate starts: after the regex's own match by default; with `retryInside`,
 * right after an accepted span, or one character after a rejected candidate's start (so a
 * candidate that ran in from a longer word is tried again inside itself).
 */
export function scanCandidates(
  text: string,
  pattern: RegExp,
  measure: (match: RegExpExecArray) => number | undefined,
  retryInside = false,
): DetectorMatch[] {
  const matches: DetectorMatch[] = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const length = measure(match);
    if (length !== undefined) matches.push({ start: match.index, end: match.index + length });
    if (retryInside) pattern.lastIndex = match.index + (length ?? 1);
  }
  return matches;
}
