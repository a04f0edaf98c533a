export type { CompositeScannerOptions } from "./composite-scanner.js";
export { compositeScanner } from "./composite-scanner.js";
export type { DefaultScannerOptions, SyncScanner } from "./default-scanner.js";
export { defaultScanner } from "./default-scanner.js";
export type {
  HeuristicScanner,
  HeuristicScannerOptions,
  VerdictThresholds,
} from "./heuristic-scanner.js";
export { heuristicScanner } from "./heuristic-scanner.js";
export type { DetectorWeights, LearnedScanner, LearnedScannerOptions } from "./learned-scanner.js";
export { learnedScanner } from "./learned-scanner.js";
export type { ClassifierVerdict, LlmClassifier, LlmClassifierOptions } from "./llm-classifier.js";
export { classifierSystemPrompt, llmClassifier } from "./llm-classifier.js";
export type { ValueProvenance } from "./provenance.js";
export type { QuarantineEnvelope, QuarantineOptions } from "./quarantine.js";
export { flaggedSpanTag, quarantine } from "./quarantine.js";
export type { AnchorScript, RuleAnchor } from "./rule-prefilter.js";
export type { HeuristicRule, RuleView } from "./rules.js";
export { defaultRules } from "./rules.js";
export type { SinkKind } from "./sink-values.js";
export { maxSinkListLength, maxSinkValueLength, sinkKinds } from "./sink-values.js";
export { taintGate } from "./taint-gate.js";
export type { TaintGateOptions } from "./taint-gate-options.js";
export type { SinkTool, TaintSink } from "./taint-sinks.js";
