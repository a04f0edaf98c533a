import type { Detector, DetectorMatch } from "../detector.js";

const CANDIDATE = /(?<![\w@.])(?:(?:https?|ftp|wss?):\/\/|www\.)[^\s<>"'`{}|\\^]{2,2048}/gi;

/**
 * Finds web addresses that start with a scheme or `www.` (off by default: most URLs in logs
 * are not personal; turn it on with `types: [...DEFAULT_TYPES, "URL"]`).
 */
export function urlDetector(): Detector {
  return {
    type: "URL",
    name: "url",
    priority: 10,
    maxLength: 2100,
    find(text) {
      const matches: DetectorMatch[] = [];
      CANDIDATE.lastIndex = 0;
      for (let match = CANDIDATE.exec(text); match !== null; match = CANDIDATE.exec(text)) {
        let end = match.index + match[0].length;
        while (end > match.index && /[.,;:!?)\]]/.test(text[end - 1]!)) end--;
        const url = match[0].slice(0, end - match.index);
        const host = url.replace(/^[a-z]+:\/\//i, "").replace(/^www\./i, "");
        if (!/^[^/?#]*\.[A-Za-z]{2,}/.test(host)) continue;
        matches.push({ start: match.index, end });
      }
      return matches;
    },
  };
}
