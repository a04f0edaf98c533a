import type { Detector, DetectorMatch } from "../detector.js";

const CANDIDATE =
  /(?<![\w:.-])(?:[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})(?![\w:-]|\.\w)/g;

/**
 * Finds MAC addresses (`00:1A:2B:3C:4D:5E`, `00-1A-…`, Cisco `0012.3456.789A`) with one
 * separator throughout; the all-zero and broadcast addresses identify nobody and are skipped.
 */
export function macAddressDetector(): Detector {
  return {
    type: "MAC_ADDRESS",
    name: "mac-address",
    priority: 25,
    maxLength: 20,
    find(text) {
      const matches: DetectorMatch[] = [];
      CANDIDATE.lastIndex = 0;
      for (let match = CANDIDATE.exec(text); match !== null; match = CANDIDATE.exec(text)) {
        const hex = match[0].replace(/[:.-]/g, "").toLowerCase();
        if (hex === "000000000000" || hex === "ffffffffffff") continue;
        matches.push({ start: match.index, end: match.index + match[0].length });
      }
      return matches;
    },
  };
}
