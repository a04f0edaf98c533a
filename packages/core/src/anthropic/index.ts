export { classifyClaudeError } from "./classify-claude-error.js";
export type {
  ClaudeClient,
  ClaudeEffort,
  ClaudeModel,
  ClaudeModelOptions,
  ClaudeRequestOptions,
} from "./claude-model.js";
export { claudeEfforts, claudeModel } from "./claude-model.js";
export { MissingSdkError } from "./load-sdk.js";
