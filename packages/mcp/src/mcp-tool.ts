import { type Tool, ToolError } from "@loopguard/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { compileInputSchema } from "./input-validator.js";

/** A tool as an MCP server lists it (`tools/list`). */
export interface McpToolDefinition {
  name: string;
  description?: string | undefined;
  inputSchema: unknown;
  [key: string]: unknown;
}

/** Per-tool flags MCP's definitions do not carry (its annotations are hints from the server, not trusted). */
export interface McpToolFlags {
  /** Guarded by the taint gate: arguments must not carry values from flagged text. */
  sensitive?: boolean;
  /** Safe to retry automatically on a transient failure. Default `false`. */
  idempotent?: boolean;
  /** Milliseconds before the call is abandoned. Default 30 000. */
  timeoutMs?: number;
  /** Whose text the tool returns: `trusted` for internal lookups, `untrusted` (the default) for anything a third party can write. */
  trust?: "trusted" | "untrusted";
  /**
   * What a run's vault reveals into the tool's arguments (core's `tool({ reveal })`): `true`,
   * token kinds such as `["EMAIL"]`, or `false`. `guardMcpTools` defaults to `false` (the server
   * gets tokens, as any loopguard tool that does not declare it); the proxy defaults to `true`
   * (the host sent real values and the server it fronts must get them: its vault only keeps
   * them out of the proxy's log).
   */
  reveal?: boolean | readonly string[];
}

/** A loopguard tool backed by an MCP server's tool, and the raw results of its calls. */
export interface McpBackedTool {
  /** The loopguard tool: its `parse` validates against the server's schema; its `run` calls the server and returns the text the model reads. */
  tool: Tool<Record<string, unknown>, string>;
  /** The server's full result of a finished call, by tool-use id, until taken. */
  takeResult(toolUseId: string): CallToolResult | undefined;
}

/**
 * Builds a loopguard tool that calls `definition` on an MCP client. Throws an `McpGuardError`
 * when the tool's input schema cannot be compiled.
 */
export function mcpBackedTool(
  client: Pick<Client, "callTool">,
  definition: McpToolDefinition,
  flags: McpToolFlags,
  server: string,
): McpBackedTool {
  const { name } = definition;
  const validate = compileInputSchema(definition.inputSchema, name, server);
  const timeoutMs = flags.timeoutMs ?? 30_000;
  const results = new Map<string, CallToolResult>();
  const description = definition.description?.trim() || `MCP tool ${name} from ${server}`;
  const tool: Tool<Record<string, unknown>, string> = Object.freeze({
    name,
    description,
    sensitive: flags.sensitive ?? false,
    idempotent: flags.idempotent ?? false,
    trust: flags.trust === "trusted" ? "trusted" : "untrusted",
    reveal: flags.reveal ?? false,
    timeoutMs,
    costUsd: 0,
    spec: { name, description, input_schema: definition.inputSchema as Record<string, unknown> },
    parse: validate,
    run: async (
      args: Record<string, unknown>,
      context: { signal: AbortSignal; toolUseId: string },
    ) => {
      let result: CallToolResult;
      try {
        result = (await client.callTool({ name, arguments: args }, undefined, {
          signal: context.signal,
          // loopguard's own timeout abandons the call first; this one only frees the request.
          timeout: timeoutMs + 1_000,
        })) as CallToolResult;
      } catch (error) {
        if (context.signal.aborted) throw error;
        throw new ToolError(
          `[mcp] ${server} failed tool "${name}": ${(error as Error).message ?? String(error)}`,
          { cause: error },
        );
      }
      if (!result || !Array.isArray(result.content))
        throw new ToolError(
          `[mcp] ${server} answered tool "${name}" with a malformed result (no content array)`,
        );
      results.set(context.toolUseId, result);
      return textOf(result);
    },
  });
  return {
    tool,
    takeResult(toolUseId) {
      const result = results.get(toolUseId);
      results.delete(toolUseId);
      return result;
    },
  };
}

/** The text a model reads from a tool result: its text parts, with a placeholder for the rest. */
export function textOf(result: CallToolResult): string {
  return result.content
    .map((part) => {
      if (part.type === "text") return part.text;
      if (part.type === "image" || part.type === "audio") return `[${part.type} ${part.mimeType}]`;
      if (part.type === "resource")
        return "text" in part.resource ? part.resource.text : `[resource ${part.resource.uri}]`;
      if (part.type === "resource_link") return `[resource ${part.uri}]`;
      return `[${(part as { type: string }).type}]`;
    })
    .join("\n");
}
