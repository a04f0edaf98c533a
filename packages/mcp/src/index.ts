export { McpGuardError } from "./errors.js";
export type { GuardedMcpTool, GuardMcpToolsOptions } from "./guard-mcp-tools.js";
export { guardMcpTools, listAllTools } from "./guard-mcp-tools.js";
export type { InputValidator } from "./input-validator.js";
export { compileInputSchema } from "./input-validator.js";
export type { McpProxy, McpProxyOptions } from "./mcp-proxy.js";
export { runMcpProxy } from "./mcp-proxy.js";
export type { McpBackedTool, McpToolDefinition, McpToolFlags } from "./mcp-tool.js";
export { mcpBackedTool, textOf } from "./mcp-tool.js";
