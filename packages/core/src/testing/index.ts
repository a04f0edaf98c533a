export { memoryEventStore } from "../memory-event-store.js";
export { memoryLimitStore } from "../memory-limit-store.js";
export { describeEventStore, type EventStoreSuiteOptions } from "./describe-event-store.js";
export { describeExporter, type ExporterSuiteOptions, sampleSpans } from "./describe-exporter.js";
export {
  describeFreezeStore,
  type FreezeStoreSuiteOptions,
} from "./describe-freeze-store.js";
export {
  decisionProblem,
  describeGate,
  type GateSuiteCall,
  type GateSuiteOptions,
} from "./describe-gate.js";
export { describeLimitStore, type LimitStoreSuiteOptions } from "./describe-limit-store.js";
export { describeScanner, type ScannerSuiteOptions, scanProblem } from "./describe-scanner.js";
export { eventBuilders, runStateOf, smallRun, toolCallOf } from "./event-builders.js";
export type { FaultyModel, FaultyModelOptions, InjectedFault, ModelFault } from "./faulty-model.js";
export { faultyModel } from "./faulty-model.js";
export type { FaultyTool, FaultyToolOptions, ToolFaultMode } from "./faulty-tool.js";
export { failingTool, faultyTool, flakyTool, hangingTool, slowTool } from "./faulty-tool.js";
export {
  applyLoopbackEdits,
  type LoopbackEdited,
  loopbackClearedPlaceholder,
} from "./loopback-context-edits.js";
export { loopbackTokenCount } from "./loopback-token-count.js";
export type {
  MessagesApiServer,
  MessagesApiServerOptions,
  ReceivedRequest,
  ServerHandler,
  ServerReply,
  StreamBehaviour,
} from "./messages-api-server.js";
export { messagesApiServer } from "./messages-api-server.js";
export type {
  PromptCacheSimulator,
  PromptCacheSimulatorOptions,
  SimulatedCacheUsage,
} from "./prompt-cache-simulator.js";
export { promptCacheSimulator } from "./prompt-cache-simulator.js";
export type { RecordingExporter } from "./recording-exporter.js";
export { recordingExporter } from "./recording-exporter.js";
export { bareStart, retryEvent, retryLog } from "./retry-log.js";
export type {
  Script,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedReply,
} from "./scripted-model.js";
export { fillReply, scriptedModel } from "./scripted-model.js";
export { rejectedError, thrownError } from "./thrown-error.js";
export {
  callUntilResult,
  lookupOrderTool,
  type ScriptedCall,
  type ToolLoopUsage,
  toolCallsModel,
  toolLoopModel,
} from "./tool-loop-model.js";
