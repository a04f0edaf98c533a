import type { Provenance, Scanner, ScanResult, ScanVerdict } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { type HeuristicScannerOptions, heuristicScanner } from "./heuristic-scanner.js";
import { type LearnedScannerOptions, learnedScanner } from "./learned-scanner.js";
import { scannerErrorResult } from "./scanner-error.js";

/** Options of {@link defaultScanner}. */
export interface DefaultScannerOptions {
  /** Options of the rule scanner. */
  heuristic?: HeuristicScannerOptions;
  /** Options of the learned scanner (weights, thresholds). */
  learned?: LearnedScannerOptions;
  /** The scanner's name. Default `default`. */
  name?: string;
}

/** A synchronous scanner (both parts of the default scanner are). */
export interface SyncScanner extends Scanner {
  scan(text: string, provenance?: Provenance): ScanResult;
}

const rank: Record<ScanVerdict, number> = { clean: 0, suspicious: 1, injection: 2 };

/**
 * Creates the recommended scanner: the heuristic rules and the learned detector on the same
 * text, the stronger verdict winning, with the findings (and spans) of both. Synchronous, no
 * model call. Construction throws an `[injection]` error when the learned detector's weights are
 * missing or corrupt; a part that throws while scanning gives `suspicious` with the rule
 * `scanner_error` (fail closed).
 *
 * @example
 * const agent = createAgent({ model, tools, scanner: defaultScanner(), envelope: quarantine(), gates: [taintGate()] });
 */
export function defaultScanner(options: DefaultScannerOptions = {}): SyncScanner {
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[injection] defaultScanner(options): options must be an object",
    );
  const rules = heuristicScanner(options.heuristic);
  const learned = learnedScanner(options.learned);
  const name = options.name ?? "default";
  const parts: SyncScanner[] = [rules, learned];
  return {
    name,
    scan(text: string, provenance: Provenance = { source: "document" }): ScanResult {
      if (typeof text !== "string")
        throw new InvalidArgumentError(
          `[injection] defaultScanner.scan: text must be a string, got ${typeof text}`,
        );
      let verdict: ScanVerdict = "clean";
      let score = 0;
      const findings: ScanResult["findings"] = [];
      for (const part of parts) {
        let result: ScanResult;
        try {
          result = part.scan(text, provenance);
        } catch (error) {
          result = scannerErrorResult(part.name, error);
        }
        if (rank[result.verdict] > rank[verdict]) verdict = result.verdict;
        if (result.score > score) score = result.score;
        findings.push(...result.findings);
      }
      // The score agrees with the verdict: a flagged text never reports a score below a clean one.
      return { verdict, score, findings, scanner: name };
    },
  };
}
