export type { EncodedSegment } from "./decode-segments.js";
export { findEncodedSegments, rot13 } from "./decode-segments.js";
export type { HeuristicScanner, HeuristicScannerOptions, VerdictThresholds } from "./heuristic-scanner.js";
export { combineWeights, heuristicScanner, verdictOf } from "./heuristic-scanner.js";
export type { NormalizedText, NormalizeOptions, TextView } from "./normalize-text.js";
export { normalizeText, phraseView } from "./normalize-text.js";
export type { HeuristicRule, RuleView } from "./rules.js";
export { defaultRules } from "./rules.js";
