import { AsyncResource } from "node:async_hooks";
import { type RunHandle, stopRun, withRun } from "@loopguard/core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ChildStdioTransport } from "./child-stdio-transport.js";
import { McpGuardError } from "./errors.js";
import { guardOptionsOf } from "./guard-mcp-tools.js";
import type { McpProxy, McpProxyOptions, McpProxyStop } from "./mcp-proxy-options.js";
import { type EnterRun, ProxyCalls } from "./proxy-calls.js";
import { ProxyCatalog } from "./proxy-catalog.js";
import { serveHost } from "./proxy-host.js";
import { sleep, stringEnv } from "./proxy-support.js";

export type {
  McpProxy,
  McpProxyOptions,
  McpProxyStop,
  McpWithheld,
} from "./mcp-proxy-options.js";

const proxyInfo = { name: "loopguard-mcp-proxy", version: "0.1.0" };
const defaultMaxOutputChars = 100_000;
const defaultMaxMessageBytes = 8 * 1024 * 1024;

/**
 * Starts an MCP server on stdio that puts loopguard's gate pipeline in front of a real MCP
 * server: it starts `command` as a child and proxies its tools, resources and prompts. Names
 * are vetted (invisible characters, non-canonical forms, duplicates, look-alikes of each other
 * or of a name a policy rule mentions are withheld), descriptions are scanned, and every
 * `tools/call`, `resources/read` and `prompts/get` passes the gates (policy, RunGuard, taint,
 * approvals) as `name`, `resource:<uri>` or `prompt:<name>`. An allowed call returns what
 * the server returned, `structuredContent` included; flagged strings are enveloped in place and
 * long results cut. A refusal is an MCP tool error (or a JSON-RPC error for resources and
 * prompts) saying why and what to do instead. One proxy process is one run.
 *
 * @example
 * const proxy = await runMcpProxy({ command: "npx", args: ["-y", "some-mcp-server"], policy: loadPolicyFile("policy.json") });
 * const { reason, message } = await proxy.closed;
 */
export async function runMcpProxy(options: McpProxyOptions): Promise<McpProxy> {
  checkOptions(options);
  const log =
    options.log ??
    ((line: string) => {
      process.stderr.write(`${line}\n`);
    });
  const commandLine = [options.command, ...(options.args ?? [])].join(" ");
  const gates = [...(options.policy ? [options.policy] : []), ...(options.gates ?? [])];
  // The proxy envelopes flagged strings itself (leaf by leaf), so the pipeline only scans.
  const { envelope, ...guardOptions } = guardOptionsOf({ ...options, gates });
  const client = await connectServer(options, log, commandLine);
  const server = `MCP server "${client.getServerVersion()?.name ?? options.command}"`;
  const capabilities = client.getServerCapabilities() ?? {};

  // ---- the catalog: what the server lists, vetted ----------------------------------------
  const calls = new ProxyCalls({ scanner: options.scanner, envelope });
  const catalog = new ProxyCatalog({
    client,
    options,
    gates,
    entryContext: {
      server,
      maxOutputChars: options.maxOutputChars ?? defaultMaxOutputChars,
      guardOptions,
      progressOf: calls.progressOf,
      log,
    },
  });
  const instructions = await catalog.instructions();
  try {
    if (capabilities.tools) await catalog.refreshTools();
    if (capabilities.prompts) await catalog.refreshPrompts();
    if (capabilities.resources) {
      await catalog.refreshResources();
      await catalog
        .refreshTemplates()
        .catch((error: Error) =>
          log(`[mcp] ${server} failed resources/templates/list: ${error.message}`),
        );
    }
  } catch (error) {
    await client.close().catch(() => {});
    throw new McpGuardError(
      `[mcp] ${server} failed to list what it offers at start: ${(error as Error).message}`,
      { cause: error },
    );
  }

  // ---- the run ------------------------------------------------------------------------------
  const proxyRun = await openRun(options, client);
  calls.open(proxyRun.run, proxyRun.enter);

  // ---- the host side ------------------------------------------------------------------------
  const host = new Server(proxyInfo, {
    capabilities: {
      ...(capabilities.tools ? { tools: { listChanged: true } } : {}),
      ...(capabilities.prompts ? { prompts: { listChanged: true } } : {}),
      ...(capabilities.logging ? { logging: {} } : {}),
      ...(capabilities.resources
        ? {
            resources: {
              listChanged: true,
              ...(capabilities.resources.subscribe ? { subscribe: true } : {}),
            },
          }
        : {}),
    },
    ...(instructions ? { instructions } : {}),
  });
  host.onerror = (error) => log(`[mcp] host connection: ${error.message}`);
  serveHost({ host, client, catalog, calls, options, log }, capabilities);

  // ---- stopping -----------------------------------------------------------------------------
  const { stop, closed } = stopper({ options, log, host, client, calls, proxyRun });
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
    run: proxyRun.run,
    closed,
    withheld: () => catalog.withheldList(),
    close: () => stop("closed", "[mcp] proxy closed"),
  };
}

/** Starts the real server as a child and connects to it; a failure names the command. */
async function connectServer(
  options: McpProxyOptions,
  log: (line: string) => void,
  commandLine: string,
): Promise<Client> {
  let serverLabel = `MCP server \`${options.command}\``;
  const client = new Client(proxyInfo, {
    capabilities: options.sampling === "pass" ? { sampling: {} } : {},
  });
  const childTransport = new ChildStdioTransport({
    command: options.command,
    args: [...(options.args ?? [])],
    env: { ...getDefaultEnvironment(), ...stringEnv(process.env), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    maxMessageBytes: options.maxMessageBytes ?? defaultMaxMessageBytes,
    label: () => serverLabel,
    ...(options.serverStderr ? { stderr: options.serverStderr } : {}),
  });
  // What the server does wrong (garbage lines, stray ids, oversized messages) is logged; the
  // proxy stays up.
  client.onerror = (error) =>
    log(
      error.message.startsWith("[mcp]") ? error.message : `[mcp] ${serverLabel}: ${error.message}`,
    );
  try {
    await client.connect(childTransport);
  } catch (error) {
    await client.close().catch(() => {});
    throw new McpGuardError(
      `[mcp] could not start the MCP server \`${commandLine}\`: ${(error as Error).message}; check the command runs on its own and speaks MCP on stdio`,
      { cause: error },
    );
  }
  serverLabel = `MCP server "${client.getServerVersion()?.name ?? options.command}"`;
  return client;
}

/** The proxy's run: open until the proxy stops. */
interface ProxyRun {
  run: RunHandle;
  /** Enters the run (the host's requests arrive outside any async context of ours). */
  enter: EnterRun;
  /** Lets the run end. */
  end: () => void;
  /** Settles when the run has ended and been written. */
  finished: Promise<void>;
}

/**
 * One proxy process is one run, open until the proxy stops: every call enters it through a
 * bound function (the host's requests arrive outside any async context of ours).
 */
async function openRun(options: McpProxyOptions, client: Client): Promise<ProxyRun> {
  let run!: RunHandle;
  let enter!: EnterRun;
  let end!: () => void;
  const runEnded = new Promise<void>((resolve) => {
    end = resolve;
  });
  let finished: Promise<void> = Promise.resolve();
  try {
    await new Promise<void>((resolve, reject) => {
      finished = withRun({ agentId: "mcp-proxy", ...options.run }, (handle) => {
        run = handle;
        enter = AsyncResource.bind(<T>(fn: () => Promise<T>): Promise<T> => fn()) as EnterRun;
        resolve();
        return runEnded;
      });
      finished.catch(reject);
    });
  } catch (error) {
    await client.close().catch(() => {});
    throw new McpGuardError(`[mcp] could not open the proxy's run: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return { run, enter, end, finished };
}

/**
 * How the proxy stops, once, whatever stops it: calls in flight answer first (unless the host
 * is gone), the host is disconnected, the run ends stopped (its approvals withdrawn), then the
 * server is closed.
 */
function stopper(parts: {
  options: McpProxyOptions;
  log: (line: string) => void;
  host: Server;
  client: Client;
  calls: ProxyCalls;
  proxyRun: ProxyRun;
}) {
  const { options, log, host, client, calls, proxyRun } = parts;
  let settle!: (value: { reason: McpProxyStop; message: string }) => void;
  const closed = new Promise<{ reason: McpProxyStop; message: string }>((resolve) => {
    settle = resolve;
  });
  let stopping = false;
  const stop = async (reason: McpProxyStop, message: string) => {
    if (stopping) return;
    stopping = true;
    if (reason !== "closed") log(message);
    // Calls in flight end quickly once the child is gone (their requests are rejected):
    // let them answer the host before it is disconnected.
    if (reason !== "host_closed" && calls.inFlight.size > 0)
      await Promise.race([Promise.allSettled([...calls.inFlight]), sleep(2_000)]);
    await host.close().catch(() => {});
    // An embedded proxy's output stream ends with it, so its host sees the end too.
    if (options.stdout && options.stdout !== process.stdout) options.stdout.end();
    // The run ends with the proxy, stopped: its open approvals are withdrawn (nobody can make
    // the identical call any more), and the log says why.
    stopRun(
      proxyRun.run,
      reason === "host_closed"
        ? "host_disconnected"
        : reason === "server_exited"
          ? "server_exited"
          : "proxy_closed",
      message,
    );
    proxyRun.end();
    // The run ends before the server is closed: a host that sends SIGTERM soon after it closes
    // stdin (the SDK's does, after 2 s) must not find the run still open, and a server that
    // ignores its own SIGTERM cannot hold the log hostage. A call still waiting on the server
    // ends when the server is closed, so the wait before closing is bounded.
    const ended = proxyRun.finished.then(
      () => undefined,
      (error: Error) => log(`[mcp] the proxy's run could not be ended: ${error.message}`),
    );
    await Promise.race([ended, sleep(1_000)]);
    await client.close().catch(() => {});
    await ended;
    settle({ reason, message });
  };
  return { stop, closed };
}

function checkOptions(options: McpProxyOptions): void {
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
  for (const key of ["maxOutputChars", "maxMessageBytes"] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1_000))
      throw new McpGuardError(
        `[mcp] runMcpProxy: ${key} must be an integer of at least 1000, got ${String(value)}`,
      );
  }
  if (
    options.flaggedDescriptions !== undefined &&
    !["withhold", "neutral"].includes(options.flaggedDescriptions)
  )
    throw new McpGuardError(
      `[mcp] runMcpProxy: flaggedDescriptions must be "withhold" or "neutral", got ${JSON.stringify(options.flaggedDescriptions)}`,
    );
  if (options.sampling !== undefined && !["refuse", "pass"].includes(options.sampling))
    throw new McpGuardError(
      `[mcp] runMcpProxy: sampling must be "refuse" or "pass", got ${JSON.stringify(options.sampling)}`,
    );
  if (
    options.serverInstructions !== undefined &&
    !["scan", "pass", "drop"].includes(options.serverInstructions)
  )
    throw new McpGuardError(
      `[mcp] runMcpProxy: serverInstructions must be "scan", "pass" or "drop", got ${JSON.stringify(options.serverInstructions)}`,
    );
  if (
    options.protectedNames !== undefined &&
    (!Array.isArray(options.protectedNames) ||
      options.protectedNames.some((name) => typeof name !== "string" || name === ""))
  )
    throw new McpGuardError(
      "[mcp] runMcpProxy: protectedNames must be an array of non-empty tool-name globs",
    );
}
