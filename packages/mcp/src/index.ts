export { McpGuardError } from "./errors.js";
export type { GuardedMcpTool, GuardMcpToolsOptions } from "./guard-mcp-tools.js";
export { guardMcpTools } from "./guard-mcp-tools.js";
export type { McpProxy, McpProxyOptions, McpProxyStop, McpWithheld } from "./mcp-proxy.js";
export { runMcpProxy } from "./mcp-proxy.js";
