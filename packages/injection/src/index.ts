export type { CompositeScannerOptions } from "./composite-scanner.js";
export { compositeScanner } from "./composite-scanner.js";
export type { DecodeLimits, EncodedSegment } from "./decode-segments.js";
export { findEncodedSegments, looksLikeText, rot13 } from "./decode-segments.js";
export type { DefaultScannerOptions, SyncScanner } from "./default-scanner.js";
export { defaultScanner } from "./default-scanner.js";
export type {
  HeuristicScanner,
  HeuristicScannerOptions,
  VerdictThresholds,
} from "./heuristic-scanner.js";
export { combineWeights, heuristicScanner, verdictOf } from "./heuristic-scanner.js";
export type { FeatureSink, TextSegment } from "./learned-features.js";
export { detectorView, emitFeatures, featureVector, segmentText } from "./learned-features.js";
export type { DetectorWeights, LearnedScanner, LearnedScannerOptions } from "./learned-scanner.js";
export { decodeDetectorWeights, encodeDetectorWeights, learnedScanner } from "./learned-scanner.js";
export type { ClassifierVerdict, LlmClassifier, LlmClassifierOptions } from "./llm-classifier.js";
export { classifierSystemPrompt, llmClassifier, parseClassifierReply } from "./llm-classifier.js";
export type { NormalizedText, NormalizeOptions, TextView } from "./normalize-text.js";
export { normalizeText, phraseView } from "./normalize-text.js";
export type { ValueProvenance } from "./provenance.js";
export type { QuarantineEnvelope, QuarantineOptions } from "./quarantine.js";
export { flaggedSpanTag, quarantine } from "./quarantine.js";
export type { AnchorScript, RuleAnchor } from "./rule-prefilter.js";
export type { HeuristicRule, RuleView } from "./rules.js";
export { defaultRules } from "./rules.js";
export type {
  ParsedKind,
  SinkElement,
  SinkKind,
  SinkParse,
  SinkParseOptions,
} from "./sink-values.js";
export {
  inferKind,
  maxSinkListLength,
  maxSinkValueLength,
  parseSinkValue,
  sinkKinds,
} from "./sink-values.js";
export { taintGate } from "./taint-gate.js";
export type { TaintGateOptions } from "./taint-gate-options.js";
export type { SinkTool, TaintSink } from "./taint-sinks.js";
export { globPattern } from "./taint-sinks.js";
export type { TaintKind, TaintValue } from "./taint-values.js";
export {
  amountKey,
  argumentKeys,
  canonicalIp,
  decodePercent,
  extractValues,
  hostOf,
  keyMatches,
  leavesOf,
  looseKey,
  matchKeysOf,
  parentDomains,
  phoneKey,
  splitKeys,
  taintKinds,
  valueKey,
} from "./taint-values.js";
export type { FoundValue } from "./trusted-values.js";
export { trustedValuesOf } from "./trusted-values.js";
