import type { Provenance, Scanner, ScanResult } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { scannerErrorResult } from "./scanner-error.js";

/** Options of {@link compositeScanner}. */
export interface CompositeScannerOptions {
  /** The fast first opinion, usually `heuristicScanner()`. */
  heuristic: Scanner;
  /** The second opinion for the grey zone, usually `llmClassifier({ model })`. */
  classifier: Scanner;
  /**
   * Heuristic scores in `[low, high)` go to the classifier; below `low` the text is clean
   * without asking, at or above `high` the heuristic's verdict stands. Default `[0.2, 0.75]`.
   */
  greyZone?: readonly [number, number];
  /** The scanner's name. Default `composite`. */
  name?: string;
}

/**
 * Creates a scanner that asks the classifier only when the heuristic score is in the grey
 * zone, so most text costs no model call. In the grey zone the classifier decides, with the
 * heuristic's findings kept beside its own. A scanner that throws gives `suspicious`: the
 * composite fails closed.
 *
 * @example
 * const scanner = compositeScanner({ heuristic: heuristicScanner(), classifier: llmClassifier({ model }), greyZone: [0.2, 0.75] });
 */
export function compositeScanner(options: CompositeScannerOptions): Scanner {
  if (!options || typeof options !== "object")
    throw new InvalidArgumentError(
      "[injection] compositeScanner(options): options must be an object with heuristic and classifier",
    );
  const { heuristic, classifier } = options;
  for (const [label, scanner] of [
    ["heuristic", heuristic],
    ["classifier", classifier],
  ] as const) {
    if (!scanner || typeof scanner.scan !== "function")
      throw new InvalidArgumentError(
        `[injection] compositeScanner({ ${label} }): must be a Scanner (an object with scan(text, provenance))`,
      );
  }
  const [low, high] = options.greyZone ?? [0.2, 0.75];
  if (
    !(typeof low === "number" && typeof high === "number" && low >= 0 && low <= high && high <= 1)
  ) {
    throw new InvalidArgumentError(
      `[injection] compositeScanner({ greyZone }): must be [low, high] with 0 <= low <= high <= 1, got ${JSON.stringify(options.greyZone)}`,
    );
  }
  const name = options.name ?? "composite";

  const safely = async (
    scanner: Scanner,
    text: string,
    provenance: Provenance,
  ): Promise<ScanResult> => {
    try {
      const result = await scanner.scan(text, provenance);
      if (!result || !["clean", "suspicious", "injection"].includes(result.verdict))
        throw new TypeError(`returned ${JSON.stringify(result)}`);
      return result;
    } catch (error) {
      return { ...scannerErrorResult(scanner.name, error), scanner: scanner.name };
    }
  };

  return {
    name,
    async scan(text: string, provenance: Provenance): Promise<ScanResult> {
      const first = await safely(heuristic, text, provenance);
      if (first.score < low && first.verdict === "clean") return first;
      if (first.score >= high) return first;
      const second = await safely(classifier, text, provenance);
      return {
        ...second,
        findings: [...first.findings, ...second.findings],
        scanner: second.scanner ?? classifier.name,
      };
    },
  };
}
