/**
 * The Scanner contract: judges whether text tries to steer the agent.
 *
 * Failure rule: scanners fail closed. A scanner that throws or rejects gives the verdict
 * `suspicious` with the rule `scanner_error`, so the text is treated as untrusted.
 */

/** Where scanned text came from. */
export interface Provenance {
  /** `tool_output`, `user_task`, `document`, ... */
  source: string;
  tool?: string;
  toolUseId?: string;
  runId?: string;
}

/** A rule that fired, with where it matched in the original text. */
export interface ScanFinding {
  rule: string;
  /** Start and end offsets in the scanned text (UTF-16 code units). */
  start: number;
  end: number;
  /** The rule's weight in the score. */
  weight?: number;
  /** A short human description. */
  detail?: string;
}

/** The verdict of a scan. */
export type ScanVerdict = "clean" | "suspicious" | "injection";

/** The result of one scan. */
export interface ScanResult {
  verdict: ScanVerdict;
  /** In [0, 1]. */
  score: number;
  findings: ScanFinding[];
  /** The scanner that decided (for composites, the last one asked). */
  scanner?: string;
}

/**
 * A scanner: reads text that arrives from the world and says whether it is an injection.
 *
 * Fails closed: a scanner that throws gives `suspicious`.
 */
export interface Scanner {
  readonly name: string;
  scan(text: string, provenance: Provenance): ScanResult | Promise<ScanResult>;
}
