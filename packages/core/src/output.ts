import type { OutputEnvelope } from "./contracts/output-envelope.js";
import type { Provenance, Scanner, ScanResult } from "./contracts/scanner.js";

// The contract moved to contracts/output-envelope.ts; the name stays importable from here.
export type { OutputEnvelope };

/** A scan as recorded in the log. */
export interface RecordedScan {
  verdict: ScanResult["verdict"];
  score: number;
  rules: string[];
  scanner?: string;
}

/**
 * Step 7: scans a tool output and wraps it. A scanner that throws gives `suspicious`
 * (scanners fail closed); an envelope that throws is a bug and propagates.
 */
export async function scanOutput(
  text: string,
  provenance: Provenance,
  scanner: Scanner | undefined,
  envelope: OutputEnvelope | undefined,
  onError: (error: unknown, where: string) => void,
): Promise<{ content: string; scan?: RecordedScan }> {
  let result: ScanResult | undefined;
  if (scanner) {
    try {
      result = await scanner.scan(text, provenance);
      if (!result || !["clean", "suspicious", "injection"].includes(result.verdict)) {
        throw new TypeError(
          `scanner ${scanner.name} returned ${JSON.stringify(result)}; expected { verdict, score, findings }`,
        );
      }
    } catch (error) {
      onError(error, `scanner ${scanner.name}`);
      result = {
        verdict: "suspicious",
        score: 0.5,
        findings: [{ rule: "scanner_error", start: 0, end: 0 }],
        scanner: scanner.name,
      };
    }
  }
  const content = envelope ? envelope(text, provenance, result) : text;
  if (!result) return { content };
  return {
    content,
    scan: {
      verdict: result.verdict,
      score: result.score,
      rules: [...new Set(result.findings.map((finding) => finding.rule))],
      ...((result.scanner ?? scanner?.name) ? { scanner: result.scanner ?? scanner!.name } : {}),
    },
  };
}
