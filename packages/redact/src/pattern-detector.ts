import type { Detector, DetectorMatch } from "./detector.js";
import { RedactOptionsError } from "./redact-error.js";

/** Options of `patternDetector`. */
export interface PatternDetectorOptions {
  /** The finding type, upper snake case (`EMPLOYEE_ID`). */
  type: string;
  /** A name for diagnostics. Defaults to the type in kebab case. */
  name?: string;
  /** What to find. The global flag is added if missing; avoid nested quantifiers. */
  pattern: RegExp;
  /** Report this capture group instead of the whole match (`/api_secret=(\w+)/`, group 1). */
  group?: number;
  /** A check on each matched value, such as a checksum. */
  validate?: (value: string) => boolean;
  /** Priority where spans overlap; defaults to 50. */
  priority?: number;
  /** The longest value it can match, for the streaming redactor. Defaults to 256. */
  maxLength?: number;
}

/**
 * Creates a detector from a regular expression, for identifiers of your own.
 *
 * How it fails: invalid options throw `RedactOptionsError` at creation; a `validate` that
 * throws makes `redact` throw (fail closed).
 *
 * @example
 * const employeeId = patternDetector({ type: "EMPLOYEE_ID", pattern: /\bEMP-\d{6}\b/ });
 * redact("ask EMP-123456", { detectors: [employeeId] }).text; // "ask [EMPLOYEE_ID]"
 */
export function patternDetector(options: PatternDetectorOptions): Detector {
  if (typeof options !== "object" || options === null) {
    throw new RedactOptionsError(
      "[redact] patternDetector takes an options object { type, pattern }.",
    );
  }
  const { type, pattern, group, validate, priority = 50, maxLength = 256 } = options;
  if (typeof type !== "string" || !/^[A-Z][A-Z0-9_]*$/.test(type)) {
    throw new RedactOptionsError(
      `[redact] patternDetector: type must be upper snake case like "EMPLOYEE_ID"; got ${JSON.stringify(type)}.`,
    );
  }
  if (!(pattern instanceof RegExp)) {
    throw new RedactOptionsError("[redact] patternDetector: pattern must be a RegExp.");
  }
  if (group !== undefined && !(Number.isInteger(group) && group >= 0)) {
    throw new RedactOptionsError("[redact] patternDetector: group must be a non-negative integer.");
  }
  if (validate !== undefined && typeof validate !== "function") {
    throw new RedactOptionsError(
      "[redact] patternDetector: validate must be a function (value) => boolean.",
    );
  }
  if (group !== undefined && group > 0) {
    // Matching the empty alternative yields one slot per capture group of the pattern.
    const groups = (new RegExp(`${pattern.source}|`).exec("")?.length ?? 1) - 1;
    if (group > groups) {
      throw new RedactOptionsError(
        `[redact] patternDetector: group ${group} does not exist; the pattern has ${groups} capture group${groups === 1 ? "" : "s"}.`,
      );
    }
  }
  if (typeof priority !== "number" || !Number.isFinite(priority)) {
    throw new RedactOptionsError(
      `[redact] patternDetector: priority must be a finite number (higher wins where spans overlap; built-in detectors use 10 to 60; default 50); got ${String(priority)}.`,
    );
  }
  if (!(Number.isInteger(maxLength) && maxLength > 0)) {
    throw new RedactOptionsError(
      `[redact] patternDetector: maxLength must be a positive integer (the longest value it can match; default 256); got ${String(maxLength)}.`,
    );
  }
  if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
    throw new RedactOptionsError(
      `[redact] patternDetector: name must be a non-empty string, or left out to use the type in kebab case; got ${JSON.stringify(options.name)}.`,
    );
  }
  const flags = pattern.flags.includes("g")
    ? pattern.flags.replace("y", "")
    : `${pattern.flags.replace("y", "")}g`;
  const global = new RegExp(
    pattern.source,
    group !== undefined && group > 0 ? `${flags.replace("d", "")}d` : flags,
  );
  const name = options.name ?? type.toLowerCase().replace(/_/g, "-");
  return {
    type,
    name,
    priority,
    maxLength,
    find(text) {
      const matches: DetectorMatch[] = [];
      global.lastIndex = 0;
      for (let match = global.exec(text); match !== null; match = global.exec(text)) {
        if (match[0].length === 0) {
          global.lastIndex++;
          continue;
        }
        let start = match.index;
        let end = start + match[0].length;
        if (group !== undefined && group > 0) {
          const span = match.indices?.[group];
          if (span === undefined) continue;
          [start, end] = span;
          if (start === end) continue;
        }
        if (validate !== undefined && !validate(text.slice(start, end))) continue;
        matches.push({ start, end });
      }
      return matches;
    },
  };
}
