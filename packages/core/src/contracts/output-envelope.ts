/**
 * The OutputEnvelope contract: wraps every tool output before the model sees it (step 7; the
 * quarantine envelope of `@loopguard/injection`), with the output's provenance and scan.
 *
 * Failure rule: an envelope that throws is a bug, not a verdict: the error propagates (the
 * loop's run ends `failed` with the message; a guarded call rejects) and the model never sees
 * the output unwrapped. It must
 * be deterministic (the same text, provenance and scan give the same bytes), so a resumed run
 * sends what the uncrashed one would have.
 */
import type { Provenance, ScanResult } from "./scanner.js";

/**
 * Wraps a tool output before the model sees it (the quarantine envelope of
 * `@loopguard/injection`). Must be deterministic: the same text and provenance give the same
 * bytes, so a resumed run sends what the uncrashed one would have.
 */
export type OutputEnvelope = (
  text: string,
  provenance: Provenance,
  scan: ScanResult | undefined,
) => string;
