export { classifyClaudeError } from "./classify-claude-error.js";
export type {
  ClaudeCache,
  ClaudeClient,
  ClaudeEffort,
  ClaudeModel,
  ClaudeModelOptions,
  ClaudeRequestOptions,
  ClaudeThinking,
} from "./claude-model.js";
export {
  claudeContextWindow,
  claudeContextWindows,
  claudeEfforts,
  claudeModel,
  contextManagementBeta,
  MissingApiKeyError,
} from "./claude-model.js";
export { MissingSdkError } from "./load-sdk.js";
