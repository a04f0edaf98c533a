/**
 * `@loopguard/injection/internal`: what the training script, the benches and the tests use
 * beyond the scanners and gates (feature extraction, weight encoding, the normaliser, taint
 * value keys, sink parsing), kept off the root so the root holds only what users use. No
 * stability promise: these may change in any release.
 */
export type { DecodeLimits, EncodedSegment } from "../decode-segments.js";
export { findEncodedSegments, looksLikeText, rot13 } from "../decode-segments.js";
export { combineWeights, verdictOf } from "../heuristic-scanner.js";
export type { FeatureSink, TextSegment } from "../learned-features.js";
export { detectorView, emitFeatures, featureVector, segmentText } from "../learned-features.js";
export { decodeDetectorWeights, encodeDetectorWeights } from "../learned-scanner.js";
export { parseClassifierReply } from "../llm-classifier.js";
export type { NormalizedText, NormalizeOptions, TextView } from "../normalize-text.js";
export { normalizeText, phraseView } from "../normalize-text.js";
export type { ParsedKind, SinkElement, SinkParse, SinkParseOptions } from "../sink-values.js";
export { inferKind, parseSinkValue } from "../sink-values.js";
export { globPattern } from "../taint-sinks.js";
export type { TaintKind, TaintValue } from "../taint-values.js";
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
} from "../taint-values.js";
export type { FoundValue } from "../trusted-values.js";
export { trustedValuesOf } from "../trusted-values.js";
