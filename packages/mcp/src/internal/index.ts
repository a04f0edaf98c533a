/**
 * `@loopguard/mcp/internal`: the building blocks `guardMcpTools` and the proxy are made of,
 * kept off the root so the root holds only what users use. No stability promise: these may
 * change in any release.
 */
export { listAllTools } from "../guard-mcp-tools.js";
export type { InputValidator } from "../input-validator.js";
export { compileInputSchema, compileOutputSchema } from "../input-validator.js";
export type { McpBackedTool, McpToolDefinition, McpToolFlags } from "../mcp-tool.js";
export { mcpBackedTool, textOf } from "../mcp-tool.js";
export { nameSkeleton } from "../name-skeleton.js";
export type { NameRefusal, VetNamesOptions } from "../vet-names.js";
export { vetNames } from "../vet-names.js";
