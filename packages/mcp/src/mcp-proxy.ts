import { AsyncResource } from "node:async_hooks";
import type { Readable, Writable } from "node:stream";
import {
  type Gate,
  type GuardedTool,
  guardTool,
  type RunHandle,
  type WithRunContext,
  withRun,
} from "@loopguard/core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  getDefaultEnvironment,
  StdioClientTransport,
} from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ListToolsResult,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { McpGuardError } from "./errors.js";
import { type GuardMcpToolsOptions, guardOptionsOf } from "./guard-mcp-tools.js";
import {
  type McpBackedTool,
  type McpToolDefinition,
  type McpToolFlags,
  mcpBackedTool,
} from "./mcp-tool.js";

/** Options of `runMcpProxy`. */
export interface McpProxyOptions extends Omit<GuardMcpToolsOptions, "onInvalidSchema"> {
  /** The real MCP server to start as a child process. */
  command: string;
  args?: readonly string[];
  /** Extra environment for the child (it also gets the proxy's own environment). */
  env?: Record<string, string>;
  cwd?: string;
  /** Flags every tool gets unless `tools` names it (e.g. a timeout for all). */
  toolDefaults?: McpToolFlags;
  /** The policy gate (e.g. `loadPolicyFile("policy.json")` from `@loopguard/policy`); runs before `gates`. */
  policy?: Gate;
  /**
   * The run this proxy process is, as `withRun` takes it: `runId`, `agentId` (default
   * `"mcp-proxy"`), roles, attributes; `store`, `exporters`, `onEvent`, `redact`, `budget`,
   * `vault` and `approval: { durable: true }` to log it like the loop's runs (it ends when the
   * proxy stops). And `task`: the proxy never sees the user's request, so `require: "trusted"`
   * sinks refuse every argument unless trusted text is configured here.
   */
  run?: WithRunContext;
  /** Where the host talks to the proxy. Default `process.stdin` / `process.stdout`. */
  stdin?: Readable;
  stdout?: Writable;
  /** Diagnostics (never the protocol stream). Default: a line on `process.stderr`. */
  log?: (line: string) => void;
}

/** A running proxy. */
export interface McpProxy {
  /** The run every call of this proxy belongs to. */
  readonly run: RunHandle;
  /** Settles when the proxy stops: the host hung up, the child went away, or `close()`. */
  readonly closed: Promise<{ reason: "host_closed" | "server_exited" | "closed"; message: string }>;
  /** Stops the proxy and the child server. Safe to call twice. */
  close(): Promise<void>;
}

interface Entry {
  backed?: McpBackedTool;
  guarded?: GuardedTool<Record<string, unknown>, string>;
  /** Why calls to this tool are refused (its schema does not compile). */
  unusable?: string;
}

const proxyInfo = { name: "loopguard-mcp-proxy", version: "0.1.0" };

/**
 * Starts an MCP server on stdio that puts loopguard's gate pipeline in front of a real MCP
 * server: it starts `command` as a child, lists the child's tools unchanged, and passes each
 * `tools/call` through the gates (policy, RunGuard, taint on results, approvals). A refusal is
 * answered as an MCP tool error whose text gives the reason and what to do instead. One proxy
 * process is one run.
 *
 * @example
 * const proxy = await runMcpProxy({ command: "npx", args: ["-y", "some-mcp-server"], policy: loadPolicyFile("policy.json") });
 * const { reason, message } = await proxy.closed;
 */
export async function runMcpProxy(options: McpProxyOptions): Promise<McpProxy> {
  if (options === null || typeof options !== "object")
    throw new McpGuardError(
      '[mcp] runMcpProxy(options): options must be an object such as { command: "node", args: ["server.js"] }',
    );
  if (typeof options.command !== "string" || options.command.trim() === "")
    throw new McpGuardError(
      '[mcp] runMcpProxy: command must name the MCP server to start, e.g. { command: "node", args: ["server.js"] }',
    );
  if (
    options.args !== undefined &&
    (!Array.isArray(options.args) || options.args.some((arg) => typeof arg !== "string"))
  )
    throw new McpGuardError("[mcp] runMcpProxy: args must be an array of strings");
  const log =
    options.log ??
    ((line: string) => {
      process.stderr.write(`${line}\n`);
    });
  const commandLine = [options.command, ...(options.args ?? [])].join(" ");
  const gates = [...(options.policy ? [options.policy] : []), ...(options.gates ?? [])];
  const guardOptions = guardOptionsOf({ ...options, gates });

  const client = new Client(proxyInfo, { capabilities: {} });
  const childTransport = new StdioClientTransport({
    command: options.command,
    args: [...(options.args ?? [])],
    env: { ...getDefaultEnvironment(), ...stringEnv(process.env), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stderr: "inherit",
  });
  try {
    await client.connect(childTransport);
  } catch (error) {
    await client.close().catch(() => {});
    throw new McpGuardError(
      `[mcp] could not start the MCP server \`${commandLine}\`: ${(error as Error).message}; check the command runs on its own and speaks MCP on stdio`,
      { cause: error },
    );
  }
  const server = `MCP server "${client.getServerVersion()?.name ?? options.command}"`;

  const entries = new Map<string, Entry>();
  const refresh = (tools: readonly McpToolDefinition[]) => {
    const seen = new Set<string>();
    for (const definition of tools) {
      seen.add(definition.name);
      const previous = entries.get(definition.name);
      if (previous && sameDefinition(previous, definition)) continue;
      try {
        const backed = mcpBackedTool(
          client,
          definition,
          { reveal: true, ...options.toolDefaults, ...options.tools?.[definition.name] },
          server,
        );
        entries.set(definition.name, { backed, guarded: guardTool(backed.tool, guardOptions) });
      } catch (error) {
        const message = (error as Error).message;
        log(message);
        entries.set(definition.name, { unusable: message });
      }
      definitions.set(definition.name, JSON.stringify(definition.inputSchema));
    }
    for (const name of [...entries.keys()]) if (!seen.has(name)) entries.delete(name);
  };
  const definitions = new Map<string, string>();
  const sameDefinition = (_entry: Entry, definition: McpToolDefinition) =>
    definitions.get(definition.name) === JSON.stringify(definition.inputSchema);

  const listAll = async (): Promise<McpToolDefinition[]> => {
    const all: McpToolDefinition[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      all.push(...(page.tools as McpToolDefinition[]));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  };
  try {
    refresh(await listAll());
  } catch (error) {
    await client.close().catch(() => {});
    throw new McpGuardError(
      `[mcp] ${server} failed tools/list at start: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }

  // One proxy process is one run, open until the proxy stops: every call enters it through
  // this bound function (the host's requests arrive outside any async context of ours).
  let run!: RunHandle;
  let enter!: <T>(fn: () => Promise<T>) => Promise<T>;
  let endRun!: (error?: Error) => void;
  const runEnded = new Promise<void>((resolve, reject) => {
    endRun = (error) => (error ? reject(error) : resolve());
  });
  let runFinished: Promise<void> = Promise.resolve();
  try {
    await new Promise<void>((resolve, reject) => {
      runFinished = withRun({ agentId: "mcp-proxy", ...options.run }, (handle) => {
        run = handle;
        enter = AsyncResource.bind(<T>(fn: () => Promise<T>): Promise<T> => fn()) as typeof enter;
        resolve();
        return runEnded;
      });
      runFinished.catch(reject);
    });
  } catch (error) {
    await client.close().catch(() => {});
    throw new McpGuardError(`[mcp] could not open the proxy's run: ${(error as Error).message}`, {
      cause: error,
    });
  }

  const host = new Server(proxyInfo, {
    capabilities: { tools: { listChanged: true } },
    ...(client.getInstructions() ? { instructions: client.getInstructions()! } : {}),
  });

  host.setRequestHandler(ListToolsRequestSchema, async (request): Promise<ListToolsResult> => {
    const result = await client.listTools(request.params);
    if (!request.params?.cursor && !result.nextCursor) refresh(result.tools as McpToolDefinition[]);
    else refresh(await listAll());
    // The host sees the child's list unchanged.
    return result;
  });

  let calls = 0;
  const inFlight = new Set<Promise<CallToolResult>>();
  host.setRequestHandler(CallToolRequestSchema, (request, extra): Promise<CallToolResult> => {
    const answer = callTool(request, extra);
    inFlight.add(answer);
    void answer.finally(() => inFlight.delete(answer));
    return answer;
  });
  const callTool = async (
    request: { params: { name: string; arguments?: Record<string, unknown> | undefined } },
    extra: { requestId: string | number; signal: AbortSignal },
  ): Promise<CallToolResult> => {
    const name = request.params.name;
    let entry = entries.get(name);
    if (!entry) {
      try {
        refresh(await listAll());
      } catch {
        // the call is refused below with the names we know
      }
      entry = entries.get(name);
    }
    if (!entry)
      return toolError(
        `[mcp] unknown tool "${name}": ${server} lists ${[...entries.keys()].join(", ") || "no tools"}. Call one of those.`,
      );
    if (entry.unusable || !entry.guarded || !entry.backed)
      return toolError(entry.unusable ?? "[mcp] tool unavailable");
    calls += 1;
    const toolUseId = `mcp_${calls}_${String(extra.requestId)}`;
    const guarded = entry.guarded;
    const outcome = await enter(() =>
      guarded((request.params.arguments ?? {}) as Record<string, unknown>, {
        toolUseId,
        signal: extra.signal,
      }),
    );
    if (outcome.type === "refused") {
      const hints =
        outcome.fixHints.length > 0
          ? `\nWhat to do instead:\n- ${outcome.fixHints.join("\n- ")}`
          : "";
      return toolError(`Refused by loopguard (${outcome.reason}): ${outcome.message}${hints}`);
    }
    if (outcome.type === "error")
      return toolError(`[mcp] tool "${name}" failed (${outcome.kind}): ${outcome.message}`);
    const result = entry.backed.takeResult(toolUseId);
    // The run's vault keeps personal data out of the proxy's log; the host sent it and gets its
    // server's answer with the real values back.
    const vault = options.run?.vault;
    const text = vault ? vault.reveal(outcome.content) : outcome.content;
    if (!result) return { content: [{ type: "text", text }] };
    // A scan or the quarantine envelope changed what the model should read: send that text,
    // not the raw parts (structured content is dropped with them: it is the same untrusted data).
    if (text !== outcome.value)
      return {
        content: [{ type: "text", text }],
        ...(result.isError ? { isError: true } : {}),
      };
    return result;
  };

  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    await host.sendToolListChanged().catch(() => {});
  });

  let settle!: (value: {
    reason: "host_closed" | "server_exited" | "closed";
    message: string;
  }) => void;
  const closed = new Promise<{
    reason: "host_closed" | "server_exited" | "closed";
    message: string;
  }>((resolve) => {
    settle = resolve;
  });
  let stopping = false;
  const stop = async (reason: "host_closed" | "server_exited" | "closed", message: string) => {
    if (stopping) return;
    stopping = true;
    if (reason !== "closed") log(message);
    // Calls in flight end quickly once the child is gone (their requests are rejected):
    // let them answer the host before it is disconnected.
    if (reason !== "host_closed" && inFlight.size > 0)
      await Promise.race([Promise.allSettled([...inFlight]), sleep(2_000)]);
    await host.close().catch(() => {});
    // An embedded proxy's output stream ends with it, so its host sees the end too.
    if (options.stdout && options.stdout !== process.stdout) options.stdout.end();
    await client.close().catch(() => {});
    // The run ends with the proxy: failed when its server went away, completed otherwise.
    endRun(reason === "server_exited" ? new Error(message) : undefined);
    await runFinished.catch(() => {});
    settle({ reason, message });
  };
  client.onclose = () => {
    void stop(
      "server_exited",
      `[mcp] ${server} (\`${commandLine}\`) exited or closed its stdio; the proxy stops (restart the host's MCP connection to start it again)`,
    );
  };
  host.onclose = () => {
    void stop(
      "host_closed",
      "[mcp] the host closed the connection; the proxy stops and ends the MCP server",
    );
  };
  const stdin = options.stdin ?? process.stdin;
  await host.connect(new StdioServerTransport(stdin, options.stdout ?? process.stdout));
  // The SDK's stdio transport does not notice the host hanging up; without this the child
  // would keep the process alive after the host is gone.
  stdin.once("end", () => {
    void stop(
      "host_closed",
      "[mcp] the host closed stdin; the proxy stops and ends the MCP server",
    );
  });

  return {
    run,
    closed,
    close: () => stop("closed", "[mcp] proxy closed"),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function toolError(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === "string") out[key] = value;
  return out;
}
