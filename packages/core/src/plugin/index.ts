/**
 * `@loopguard/core/plugin`: what authors of gates, scanners, event stores, exporters, models and
 * loop adapters need beyond the contracts (which the root exports): the run state and per-gate
 * memory, the pipeline, digests, the fold of a log, summaries, spans, retries and the stream
 * helpers. Application code needs only `@loopguard/core`.
 */
export type { SharedGuardOptions } from "../adapter-guard-options.js";
export type { ApprovalOutcome } from "../approval.js";
export { readApproverAnswer } from "../approval.js";
export { isShadowGate } from "../contracts/gate.js";
export { gateMemory } from "../contracts/run-view.js";
export { digestOf, sha256 } from "../digest.js";
export { runEventTypes } from "../events.js";
export { formatToolOutput } from "../execute.js";
export type { PendingTurn } from "../fold.js";
export { foldRun, RunFold, textOf } from "../fold.js";
export { canonicalJson } from "../json.js";
export { checkLimitOperations, limitBatch } from "../limit-batch.js";
export { limitSpecs } from "../limit-specs.js";
export { latinLookAlikes } from "../look-alikes.js";
export { filterSummaries } from "../memory-event-store.js";
export type { HaltingGate, JudgeInput, Judgement } from "../pipeline.js";
export { defaultHaltOn, judgeCall, policyDigestOf, sortGates } from "../pipeline.js";
export { classifyError, retryAfterFrom, sleep } from "../retry.js";
export { RunState } from "../run-state.js";
export { spansFromEvents, traceIdOf } from "../spans.js";
export type {
  AssemblerUpdate,
  MessageAssembler,
  MessageEventsOptions,
} from "../stream/assemble-message.js";
export {
  assembleMessage,
  createMessageAssembler,
  messageEvents,
} from "../stream/assemble-message.js";
export { attachStream } from "../stream/attach-stream.js";
export type { DeltaFilter, DeltaFilterOptions, TextTransform } from "../stream/delta-filter.js";
export { createDeltaFilter, defaultStreamHoldBack } from "../stream/delta-filter.js";
export type { StreamAttemptOptions, StreamAttemptOutcome } from "../stream/stream-attempt.js";
export { streamAttempt } from "../stream/stream-attempt.js";
export { summarize } from "../summary.js";
export { validateListFilter } from "../validate-list-filter.js";
