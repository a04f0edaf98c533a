import { AsyncResource } from "node:async_hooks";
import {
  currentRun,
  type GuardedTool,
  type GuardOptions,
  guardTool,
  type RunContextInput,
  withRun,
} from "@loopguard/core";
import type { SharedGuardOptions } from "@loopguard/core/plugin";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { McpGuardError } from "./errors.js";
import { type McpToolDefinition, type McpToolFlags, mcpBackedTool } from "./mcp-tool.js";

/** Options of `guardMcpTools`. */
export interface GuardMcpToolsOptions extends SharedGuardOptions {
  /** Flags per tool name (sensitive, idempotent, timeout). */
  tools?: Record<string, McpToolFlags>;
  /**
   * A tool whose input schema cannot be compiled: `"throw"` (the default) rejects with an
   * `McpGuardError` naming it; `"skip"` leaves it out and reports the error to `onError`.
   */
  onInvalidSchema?: "throw" | "skip";
  /**
   * The run opened for calls made outside any `withRun`: one run per `guardMcpTools` call
   * (shared by all its tools), so loop detection and taint still see the history. It keeps no
   * log. Default `{ agentId: "mcp" }`.
   */
  run?: RunContextInput;
}

/** A guarded MCP tool: call it like `guardTool`'s result; the value is the text the model reads. */
export type GuardedMcpTool = GuardedTool<Record<string, unknown>, string> & {
  /** The server's full result (content parts, structured content) of a finished call, once. */
  takeResult(toolUseId: string): CallToolResult | undefined;
};

/**
 * Lists an MCP client's tools and puts each behind loopguard's gate pipeline: arguments are
 * validated against the schema the server declared, every call passes the gates under the
 * caller's `withRun`, and results are scanned. Pass `tool` of each to `createAgent`, or call
 * them from your own loop.
 *
 * @example
 * const client = new Client({ name: "app", version: "1.0.0" });
 * await client.connect(new StdioClientTransport({ command: "node", args: ["server.js"] }));
 * const tools = await guardMcpTools(client, { gates: [policy(rules), runGuard()] });
 * await withRun({ agentId: "assistant" }, () => tools[0]!({ path: "README.md" }, { toolUseId: "tu_1" }));
 */
export async function guardMcpTools(
  client: Pick<Client, "listTools" | "callTool"> & Partial<Pick<Client, "getServerVersion">>,
  options: GuardMcpToolsOptions = {},
): Promise<GuardedMcpTool[]> {
  if (!client || typeof client.listTools !== "function" || typeof client.callTool !== "function")
    throw new McpGuardError(
      "[mcp] guardMcpTools(client): client must be a connected MCP Client from @modelcontextprotocol/sdk (it needs listTools and callTool)",
    );
  if (options === null || typeof options !== "object")
    throw new McpGuardError("[mcp] guardMcpTools(client, options): options must be an object");
  const server = serverName(client);
  const definitions = await listAllTools(client, server);
  const known = new Set(definitions.map((definition) => definition.name));
  for (const name of Object.keys(options.tools ?? {}))
    if (!known.has(name))
      throw new McpGuardError(
        `[mcp] guardMcpTools: options.tools names "${name}", which ${server} does not list (it lists ${[...known].join(", ") || "no tools"})`,
      );
  const out: GuardedMcpTool[] = [];
  const enterOwnRun = ownRun(options.run);
  for (const definition of definitions) {
    let backed: ReturnType<typeof mcpBackedTool>;
    try {
      backed = mcpBackedTool(client, definition, options.tools?.[definition.name] ?? {}, server);
    } catch (error) {
      if (options.onInvalidSchema !== "skip") throw error;
      options.onError?.(error, `tool ${definition.name}`);
      continue;
    }
    const guarded = guardTool(backed.tool, guardOptionsOf(options));
    // Inside a withRun the call joins it; outside, it joins this tool set's own run.
    const call: GuardedTool<Record<string, unknown>, string> = Object.assign(
      (
        args: Record<string, unknown>,
        callOptions?: { toolUseId?: string; signal?: AbortSignal },
      ) =>
        currentRun() ? guarded(args, callOptions) : enterOwnRun(() => guarded(args, callOptions)),
      { tool: guarded.tool },
    );
    out.push(Object.assign(call, { takeResult: backed.takeResult }));
  }
  return out;
}

/** The `guardTool` options within a larger options object. */
export function guardOptionsOf(options: GuardMcpToolsOptions): GuardOptions {
  return {
    ...(options.gates ? { gates: options.gates } : {}),
    ...(options.scanner ? { scanner: options.scanner } : {}),
    ...(options.envelope ? { envelope: options.envelope } : {}),
    ...(options.approver ? { approver: options.approver } : {}),
    ...(options.approvalTimeoutMs !== undefined
      ? { approvalTimeoutMs: options.approvalTimeoutMs }
      : {}),
    ...(options.haltOn ? { haltOn: options.haltOn } : {}),
    ...(options.breaker ? { breaker: options.breaker } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  };
}

/** Every tool the server lists, following `nextCursor`. */
export async function listAllTools(
  client: Pick<Client, "listTools">,
  server: string,
): Promise<McpToolDefinition[]> {
  const tools: McpToolDefinition[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1_000; page += 1) {
    let result: Awaited<ReturnType<Client["listTools"]>>;
    try {
      result = await client.listTools(cursor ? { cursor } : undefined);
    } catch (error) {
      throw new McpGuardError(`[mcp] ${server} failed tools/list: ${(error as Error).message}`, {
        cause: error,
      });
    }
    tools.push(...(result.tools as McpToolDefinition[]));
    cursor = result.nextCursor;
    if (!cursor) return tools;
  }
  throw new McpGuardError(`[mcp] ${server} returned more than 1000 pages of tools/list`);
}

function serverName(client: Partial<Pick<Client, "getServerVersion">>): string {
  try {
    const version = client.getServerVersion?.();
    return version?.name ? `MCP server "${version.name}"` : "the MCP server";
  } catch {
    return "the MCP server";
  }
}

/** Opens (once, lazily) the run used for calls made outside any `withRun`, and enters it. */
function ownRun(context: RunContextInput | undefined): <T>(fn: () => Promise<T>) => Promise<T> {
  let enter: (<T>(fn: () => Promise<T>) => Promise<T>) | undefined;
  return <T>(fn: () => Promise<T>): Promise<T> => {
    if (!enter) {
      // A run without a log opens synchronously: its callback runs before withRun returns.
      // Only who is running: log options (a store, a budget) would open it asynchronously.
      const {
        store: _store,
        exporters: _exporters,
        redact: _redact,
        onEvent: _onEvent,
        budget: _budget,
        vault: _vault,
        approval: _approval,
        ...who
      } = (context ?? { agentId: "mcp" }) as RunContextInput & Record<string, unknown>;
      void withRun(who, () => {
        enter = AsyncResource.bind(<U>(thunk: () => Promise<U>): Promise<U> => thunk()) as <U>(
          thunk: () => Promise<U>,
        ) => Promise<U>;
      });
    }
    return enter!(fn);
  };
}
