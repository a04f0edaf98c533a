import type { ScanResult } from "@loopguard/core";

/**
 * What a combining scanner reports for a part that threw (or answered nonsense): suspicious at
 * 0.5, with a `scanner_error` finding naming the part and the error (at most 300 characters).
 * Never clean: a scanner that cannot answer must not let text through as if it had.
 */
export function scannerErrorResult(name: string, error: unknown): ScanResult {
  return {
    verdict: "suspicious",
    score: 0.5,
    findings: [
      {
        rule: "scanner_error",
        start: 0,
        end: 0,
        detail: `${name}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300),
      },
    ],
  };
}
