export type {
  Agent,
  AgentOptions,
  ApprovalAnswer,
  BlockedCall,
  Redactor,
  RunOptions,
  RunResult,
  Vault,
} from "./agent.js";
export { breakerOf, createAgent } from "./agent.js";
export type { AgentStream, AgentStreamEvent, AgentStreamOptions } from "./agent-stream.js";
export type { ApprovalOutcome, ApprovalRequest, Approver, ApproverAnswer } from "./approval.js";
export { readApproverAnswer } from "./approval.js";
export type { BreakerOptions, BreakerState } from "./circuit-breaker.js";
export { CircuitBreaker } from "./circuit-breaker.js";
export type {
  AppendOptions,
  AppendResult,
  EventStore,
  ListFilter,
  RunLease,
  RunSummary,
  StoredEvent,
  StoredEventInput,
} from "./contracts/event-store.js";
export type { Exporter, ExportResult } from "./contracts/exporter.js";
export type { FreezeRequest, FreezeStatus, FreezeStore } from "./contracts/freeze-store.js";
export type {
  AllowDecision,
  AskDecision,
  CallOutcome,
  DenyDecision,
  Gate,
  GateDecision,
  GateStep,
  ShadowGate,
  ToolCall,
} from "./contracts/gate.js";
export { isShadowGate } from "./contracts/gate.js";
export type {
  BucketSpec,
  CounterSpec,
  LimitStore,
  ReserveResult,
  TakeResult,
} from "./contracts/limit-store.js";
export type {
  CacheControl,
  ContentBlock,
  ContentBlockDelta,
  ErrorClassification,
  Message,
  MessageDeltaUsage,
  MessageStreamEvent,
  Model,
  ModelCallOptions,
  ModelRequest,
  ModelResponse,
  RedactedThinkingBlock,
  StopReason,
  TextBlock,
  ThinkingBlock,
  ToolResultBlock,
  ToolSpec,
  ToolUseBlock,
  Usage,
} from "./contracts/model.js";
export type { GateMemoryKey, RunView } from "./contracts/run-view.js";
export { gateMemory } from "./contracts/run-view.js";
export type {
  Provenance,
  ScanFinding,
  Scanner,
  ScanResult,
  ScanVerdict,
} from "./contracts/scanner.js";
export { digestOf, sha256 } from "./digest.js";
export {
  AmbiguousApprovalError,
  AppendConflictError,
  CorruptLogError,
  InvalidArgumentError,
  LoopguardError,
  ModelCallError,
  NoPendingApprovalError,
  RunNotFoundError,
  ToolError,
  UnknownModelPriceError,
} from "./errors.js";
export type {
  ApprovalDecisionEvent,
  ApprovalRequestEvent,
  Budget,
  DecisionRecord,
  ModelErrorEvent,
  ModelRequestEvent,
  ModelResponseEvent,
  ModelRetryEvent,
  RunEndEvent,
  RunEvent,
  RunEventType,
  RunHaltEvent,
  RunResumeEvent,
  RunStartEvent,
  RunStatus,
  ShadowDecisionEvent,
  ToolCallIntentEvent,
  ToolCallRefusalEvent,
  ToolCallResultEvent,
} from "./events.js";
export { runEventTypes } from "./events.js";
export type { ExecuteOptions, ToolExecution } from "./execute.js";
export { executeTool, formatToolOutput } from "./execute.js";
export type { PendingTurn } from "./fold.js";
export { foldRun, guardRunModel, RunFold, textOf } from "./fold.js";
export type { GuardedTool, GuardOptions, GuardOutcome, RunHandle } from "./guard.js";
export { currentRun, guardTool, withRun } from "./guard.js";
export type {
  GuardApprovalAnswer,
  GuardBudget,
  RunLogOptions,
  WithRunContext,
} from "./guard-run.js";
export { approveRun } from "./guard-run.js";
export type { JsonValue } from "./json.js";
export { canonicalJson } from "./json.js";
export { filterSummaries, memoryEventStore } from "./memory-event-store.js";
export { memoryLimitStore } from "./memory-limit-store.js";
export type { OutputEnvelope, RecordedScan } from "./output.js";
export type { HaltingGate, JudgeInput, Judgement } from "./pipeline.js";
export { defaultHaltOn, judgeCall, sortGates } from "./pipeline.js";
export type { ModelPrice } from "./pricing.js";
export {
  claudePrices,
  costOf,
  priceOf,
  priceTableDate,
  promptTokenBound,
  requestBytes,
  worstCaseCost,
} from "./pricing.js";
export type { ResolvedRetryOptions, RetryOptions } from "./retry.js";
export {
  backoffDelay,
  classifyError,
  resolveRetryOptions,
  retryAfterFrom,
  sleep,
} from "./retry.js";
export type { AdmittedCall, RefusedCall, RunContextInput, SeenOutput, Spend } from "./run-state.js";
export { RunState } from "./run-state.js";
export type { AttributeValue, Span, SpanEvent, SpanKind } from "./spans.js";
export { SpanBuilder, spansFromEvents, traceIdOf } from "./spans.js";
export type {
  AssemblerUpdate,
  MessageAssembler,
  MessageEventsOptions,
} from "./stream/assemble-message.js";
export {
  assembleMessage,
  createMessageAssembler,
  messageEvents,
  StreamProtocolError,
} from "./stream/assemble-message.js";
export { attachStream } from "./stream/attach-stream.js";
export type { DeltaFilter, DeltaFilterOptions, TextTransform } from "./stream/delta-filter.js";
export { createDeltaFilter, defaultHoldBack } from "./stream/delta-filter.js";
export type { StreamAttemptOptions, StreamAttemptOutcome } from "./stream/stream-attempt.js";
export { StreamIdleError, streamAttempt } from "./stream/stream-attempt.js";
export { summarize } from "./summary.js";
export type { ObjectSchema, ParseResult, Tool, ToolContext, ToolOptions } from "./tool.js";
export { tool } from "./tool.js";
