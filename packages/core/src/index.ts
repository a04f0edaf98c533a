/**
 * `@loopguard/core`: the loop (`createAgent`), tools (`tool`), the guard for loops you already
 * have (`guardTool`, `withRun`, `approveRun`), the contracts every plug-in implements, the
 * events of a run's log, the errors, prices and budgets. Plug-in authors also need
 * `@loopguard/core/plugin`; tests need `@loopguard/core/testing`.
 */
export type {
  Agent,
  AgentOptions,
  ApprovalAnswer,
  BlockedCall,
  RunOptions,
  RunResult,
} from "./agent.js";
export { createAgent } from "./agent.js";
export type {
  AgentStream,
  AgentStreamEvent,
  AgentStreamEventBody,
  AgentStreamOptions,
} from "./agent-stream.js";
export type { AsToolOptions, ChildErrorCode, ChildRunError, DefaultChildInput } from "./as-tool.js";
export { childRunId } from "./child-run-id.js";
export type {
  ChildRunControl,
  ChildRunner,
  ChildRunOutcome,
  ChildRunRequest,
} from "./child-runner.js";
export { inlineChildRunner } from "./child-runner.js";
export type { BreakerOptions, BreakerState } from "./circuit-breaker.js";
export { ContextWindowError } from "./context-manager.js";
export type { ContextWindowOptions } from "./context-window-options.js";
export type { ApprovalRequest, Approver, ApproverAnswer } from "./contracts/approver.js";
export type {
  AppendOptions,
  AppendResult,
  EventStore,
  ListCursor,
  ListFilter,
  RunLease,
  RunSummary,
  StoredEvent,
  StoredEventInput,
} from "./contracts/event-store.js";
export type { Exporter, ExporterShutdown, ExportResult } from "./contracts/exporter.js";
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
export type {
  BatchResult,
  BucketSpec,
  CounterSpec,
  LimitOperation,
  LimitOperationResult,
  LimitStore,
  ReserveResult,
  TakeResult,
} from "./contracts/limit-store.js";
export type {
  AppliedContextEdit,
  CacheControl,
  ClearToolUsesEdit,
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
export type { OutputEnvelope } from "./contracts/output-envelope.js";
export type { Redactor } from "./contracts/redactor.js";
export type {
  RunBudget,
  RunBudgetRun,
  RunBudgetVerdict,
} from "./contracts/run-budget.js";
export type { GateMemoryKey, RunView } from "./contracts/run-view.js";
export type {
  Provenance,
  ScanFinding,
  Scanner,
  ScanResult,
  ScanVerdict,
} from "./contracts/scanner.js";
export type { AttributeValue, Span, SpanEvent, SpanKind } from "./contracts/span.js";
export type { Vault } from "./contracts/vault.js";
export {
  AmbiguousApprovalError,
  AppendConflictError,
  CorruptLogError,
  ExportDroppedError,
  InvalidArgumentError,
  LoopguardError,
  ModelCallError,
  NoPendingApprovalError,
  RunLogDroppedError,
  RunNotFoundError,
  ToolError,
  UnknownModelPriceError,
  VolatileStoreError,
} from "./errors.js";
export type {
  ApprovalDecisionEvent,
  ApprovalRequestEvent,
  Budget,
  ChildApprovalRequest,
  ChildRunEndEvent,
  ChildRunStartEvent,
  ChildRunWaitEvent,
  ClearedToolResult,
  ContextCompactedEvent,
  ContextCompactionFailedEvent,
  ContextCompactionRequestEvent,
  ContextEditedEvent,
  DecisionRecord,
  ModelErrorEvent,
  ModelRequestEvent,
  ModelResponseEvent,
  ModelRetryEvent,
  RunEndEvent,
  RunEvent,
  RunEventType,
  RunHaltEvent,
  RunParent,
  RunResumeEvent,
  RunStartEvent,
  RunStatus,
  ShadowDecisionEvent,
  ToolCallIntentEvent,
  ToolCallRefusalEvent,
  ToolCallResultEvent,
} from "./events.js";
export type { ExportQueueOptions } from "./export-queue.js";
export type { GuardedTool, GuardOptions, GuardOutcome, RunHandle } from "./guard.js";
export { currentRun, guardTool, stopRun, withRun } from "./guard.js";
export type {
  GuardApprovalAnswer,
  GuardBudget,
  RunLogOptions,
  WithRunContext,
} from "./guard-run.js";
export { approveRun } from "./guard-run.js";
export type { JsonValue } from "./json.js";
export { type MemoryEventStoreOptions, memoryEventStore } from "./memory-event-store.js";
export type { RecordedScan } from "./output.js";
export type { OutputCut } from "./output-limit.js";
export { defaultMaxOutputChars } from "./output-limit.js";
export type { ModelPrice } from "./pricing.js";
export { claudePrices, costOf, priceOf, priceTableDate } from "./pricing.js";
export type { RetryOptions } from "./retry.js";
export { RunBudgetUnavailableError } from "./run-budgets.js";
export type { UncertainCall } from "./run-result.js";
export type { AdmittedCall, RefusedCall, RunContextInput, SeenOutput, Spend } from "./run-state.js";
export type { ExporterShutdownReport, ShutdownReport } from "./run-telemetry.js";
export { shutdownExporters } from "./run-telemetry.js";
export type { StreamSkip } from "./stream/assemble-message.js";
export { StreamProtocolError } from "./stream/assemble-message.js";
export { StreamIdleError } from "./stream/stream-attempt.js";
export type { ObjectSchema, ParseResult, Tool, ToolContext, ToolOptions } from "./tool.js";
export { tool } from "./tool.js";
