import type { Detector, DetectorMatch } from "../detector.js";
import { isHexCode } from "./char-classes.js";

const SEPARATED =
  /(?<![\w:.-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}(?![\w:-]|\.\w)/y;
const CISCO = /(?<![\w:.-])[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}(?![\w:-]|\.\w)/y;

/**
 * Finds MAC addresses (`00:1A:2B:3C:4D:5E`, `00-1A-…`, Cisco `0012.3456.789A`) with one
 * separator throughout; the all-zero and broadcast addresses identify nobody and are skipped.
 * Candidates are found from their first separator with `indexOf`, which is much faster than
 * a regex that must try every hex letter of the text.
 */
export function macAddressDetector(): Detector {
  return {
    type: "MAC_ADDRESS",
    name: "mac-address",
    priority: 25,
    maxLength: 20,
    find(text) {
      const matches: DetectorMatch[] = [];
      const tryAt = (pattern: RegExp, start: number) => {
        pattern.lastIndex = start;
        const match = pattern.exec(text);
        if (match === null) return;
        const hex = match[0].replace(/[:.-]/g, "").toLowerCase();
        if (hex === "000000000000" || hex === "ffffffffffff") return;
        matches.push({ start, end: start + match[0].length });
      };
      for (const separator of [":", "-"]) {
        for (
          let index = text.indexOf(separator, 2);
          index !== -1;
          index = text.indexOf(separator, index + 1)
        ) {
          if (
            isHexCode(text.charCodeAt(index - 1)) &&
            isHexCode(text.charCodeAt(index - 2)) &&
            text[index + 3] === separator
          ) {
            tryAt(SEPARATED, index - 2);
          }
        }
      }
      for (let index = text.indexOf(".", 4); index !== -1; index = text.indexOf(".", index + 1)) {
        if (
          text.charCodeAt(index + 5) === 46 &&
          isHexCode(text.charCodeAt(index - 1)) &&
          isHexCode(text.charCodeAt(index - 4))
        ) {
          tryAt(CISCO, index - 4);
        }
      }
      return matches;
    },
  };
}
