import { AsyncResource } from "node:async_hooks";
import type { Readable, Writable } from "node:stream";
import {
  type Gate,
  type GuardedTool,
  guardTool,
  type RunHandle,
  type Scanner,
  stopRun,
  type Tool,
  ToolError,
  type WithRunContext,
  withRun,
} from "@loopguard/core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  type Progress,
  PromptListChangedNotificationSchema,
  PromptSchema,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  ResourceListChangedNotificationSchema,
  ResourceSchema,
  ResourceTemplateSchema,
  ResourceUpdatedNotificationSchema,
  ResultSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  ToolListChangedNotificationSchema,
  ToolSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { ChildStdioTransport } from "./child-stdio-transport.js";
import { McpGuardError } from "./errors.js";
import { type GuardMcpToolsOptions, guardOptionsOf } from "./guard-mcp-tools.js";
import { compileInputSchema, compileOutputSchema, type InputValidator } from "./input-validator.js";
import type { McpToolFlags } from "./mcp-tool.js";
import {
  capLeaves,
  envelopeLeaves,
  type LeavesCut,
  leavesText,
  type ResultKind,
  type ResultLeaf,
  resultLeaves,
} from "./result-leaves.js";
import { type NameRefusal, vetNames } from "./vet-names.js";

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
   * `vault` and `approval: { durable: true }` to log it like the loop's runs (it ends
   * `stopped` when the proxy stops, why `host_disconnected`, `server_exited` or
   * `proxy_closed`). And `task`: the proxy never sees the user's request, so
   * `require: "trusted"` sinks refuse every argument unless trusted text is configured here.
   */
  run?: WithRunContext;
  /**
   * Names (tool-name globs) to protect beyond those the policy's rules and `tools` name: a
   * server name that looks like one of them but does not match it is refused.
   */
  protectedNames?: readonly string[];
  /**
   * A tool, prompt or resource whose description, title or schema text the `scanner` flags as
   * an injection: `"withhold"` (the default) leaves it out of the lists and refuses calls to
   * it; `"neutral"` lists it with a neutral description and no schema prose.
   */
  flaggedDescriptions?: "withhold" | "neutral";
  /**
   * The server's `instructions` (text hosts put in the model's context): `"scan"` (the default)
   * withholds them when the `scanner` flags them, `"pass"` passes them as they are, `"drop"`
   * never passes them. Instructions address the model by design, so a scanner may flag honest
   * ones (it flags server-everything's).
   */
  serverInstructions?: "scan" | "pass" | "drop";
  /**
   * The server's `sampling/createMessage` requests (it asks the host's model): `"refuse"` (the
   * default) declares no sampling capability to the server, so it offers nothing that needs
   * it; `"pass"` declares it and passes each request through the gates as the call
   * `sampling:createMessage` (its params are the arguments) to the host, when the host
   * supports sampling.
   */
  sampling?: "refuse" | "pass";
  /** Most characters of text one result passes to the host (the rest is cut with a marker and a digest). Default 100 000. */
  maxOutputChars?: number;
  /** Largest message (one line) accepted from the server; a larger one is dropped unread and its request answered with an error. Default 8 MiB. */
  maxMessageBytes?: number;
  /** The server's stderr: `"inherit"` (the default) or `"ignore"`. */
  serverStderr?: "inherit" | "ignore";
  /** Where the host talks to the proxy. Default `process.stdin` / `process.stdout`. */
  stdin?: Readable;
  stdout?: Writable;
  /** Diagnostics (never the protocol stream). Default: a line on `process.stderr`. */
  log?: (line: string) => void;
}

/** Something the server listed that the proxy keeps from the host. */
export interface McpWithheld {
  kind: "tool" | "prompt" | "resource" | "resource template" | "instructions";
  /** The name (a resource's URI, a template's URI template) as the server listed it. */
  name: string;
  reason:
    | NameRefusal["reason"]
    | "malformed_definition"
    | "invalid_output_schema"
    | "flagged_description";
  message: string;
}

/** Why a proxy stopped. */
export type McpProxyStop = "host_closed" | "server_exited" | "closed";

/** A running proxy. */
export interface McpProxy {
  /** The run every call of this proxy belongs to. */
  readonly run: RunHandle;
  /** Settles when the proxy stops: the host hung up, the child went away, or `close()`. */
  readonly closed: Promise<{ reason: McpProxyStop; message: string }>;
  /** What the proxy currently keeps from the host, and why (also logged when first seen). */
  withheld(): McpWithheld[];
  /** Stops the proxy and the child server. Safe to call twice. */
  close(): Promise<void>;
}

const proxyInfo = { name: "loopguard-mcp-proxy", version: "0.1.0" };
/** The gate-name prefixes of what is not a tool: no tool may be named with one. */
const reservedPrefix = /^(prompt|resource|sampling):/;
const defaultMaxOutputChars = 100_000;
const defaultMaxMessageBytes = 8 * 1024 * 1024;

/** One guarded thing the host can call: a tool, a prompt, or reading one resource URI. */
interface Entry {
  /** The name gates see: `send_email`, `prompt:review`, `resource:file:///a.txt`. */
  gateName: string;
  /** For messages: `tool "send_email"`, `prompt "review"`, `resource "file:///a.txt"`. */
  label: string;
  guarded?: GuardedTool<Record<string, unknown>, string>;
  /** Why calls are refused (its input schema does not compile). */
  unusable?: string;
  validateOutput?: (value: unknown) => string[];
  hasOutputSchema: boolean;
  take(toolUseId: string): Stashed | undefined;
}

interface Stashed {
  result: Record<string, unknown>;
  leaves: ResultLeaf[];
  cut: LeavesCut | undefined;
}

type Outcome =
  | { type: "ok"; stashed: Stashed; flagged: boolean; toolUseId: string }
  | { type: "refused"; text: string }
  | { type: "error"; text: string };

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
  const scanner: Scanner | undefined = options.scanner;
  const maxOutputChars = options.maxOutputChars ?? defaultMaxOutputChars;
  const flaggedMode = options.flaggedDescriptions ?? "withhold";
  const protectedPatterns = [
    ...new Set([
      ...(options.protectedNames ?? []),
      ...Object.keys(options.tools ?? {}),
      ...ruleToolNames(gates),
    ]),
  ];

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
  const server = `MCP server "${client.getServerVersion()?.name ?? options.command}"`;
  serverLabel = server;
  const capabilities = client.getServerCapabilities() ?? {};

  // ---- the catalog: what the server lists, vetted ----------------------------------------
  const withheld = new Map<string, McpWithheld>();
  const reported = new Set<string>();
  const withhold = (item: McpWithheld) => {
    const key = `${item.kind}\u0000${item.name}`;
    withheld.set(key, item);
    const line = `${item.kind}:${item.name}:${item.message}`;
    if (!reported.has(line)) {
      reported.add(line);
      log(`[mcp-proxy] withheld from the host: ${item.message}`);
    }
  };
  const clearWithheld = (kind: McpWithheld["kind"]) => {
    for (const [key, item] of withheld) if (item.kind === kind) withheld.delete(key);
  };
  const withheldOf = (kind: McpWithheld["kind"], name: string) =>
    withheld.get(`${kind}\u0000${name}`);

  const flaggedText = async (
    item: Record<string, unknown>,
    kind: string,
    name: string,
  ): Promise<string | undefined> => {
    if (!scanner) return undefined;
    const text = proseOf(item);
    if (text === "") return undefined;
    let verdict: string;
    try {
      verdict = (await scanner.scan(text, { source: "tool_description", tool: name })).verdict;
    } catch {
      verdict = "suspicious";
    }
    return verdict === "injection"
      ? `${kind} ${JSON.stringify(name)}: its description or schema text was flagged as an injection by ${scanner.name}`
      : undefined;
  };

  /** Vets one kind's items; returns those the host may see (the server's objects, or neutral copies). */
  const vet = async (
    kind: McpWithheld["kind"],
    items: readonly unknown[],
    shape: { safeParse(value: unknown): { success: boolean; error?: { message: string } } },
    nameOf: (item: Record<string, unknown>) => unknown,
    gateName: (name: string) => string,
    reserved?: (name: string) => string | undefined,
  ): Promise<Array<Record<string, unknown>>> => {
    clearWithheld(kind);
    const shaped: Array<Record<string, unknown> | undefined> = items.map((item) => {
      const parsed = shape.safeParse(item);
      if (parsed.success) return item as Record<string, unknown>;
      const name = isRecord(item) ? String(nameOf(item) ?? "?") : "?";
      withhold({
        kind,
        name,
        reason: "malformed_definition",
        message: `${kind} ${JSON.stringify(name)} from ${server} is malformed (${firstLine(parsed.error?.message)}), so it is withheld`,
      });
      return undefined;
    });
    const present = shaped.filter((item): item is Record<string, unknown> => item !== undefined);
    const refusals = vetNames(
      present.map((item) => nameOf(item)),
      {
        kind,
        protectedPatterns,
        gateName,
        ...(reserved ? { reserved } : {}),
      },
    );
    const out: Array<Record<string, unknown>> = [];
    for (const [index, item] of present.entries()) {
      const refusal = refusals.get(index);
      if (refusal) {
        withhold({
          kind,
          name: refusal.name,
          reason: refusal.reason,
          message: `${refusal.message} (${server})`,
        });
        continue;
      }
      const name = nameOf(item) as string;
      const flagged = await flaggedText(item, kind, name);
      if (!flagged) {
        out.push(item);
        continue;
      }
      if (flaggedMode === "neutral") {
        const neutral = neutralCopy(
          item,
          `${kind} ${name} from ${server} (loopguard withheld its description: a scanner flagged it).`,
        );
        if (!(await flaggedText(neutral, kind, name))) {
          log(`[mcp-proxy] ${flagged} (${server}); the host gets a neutral description`);
          out.push(neutral);
          continue;
        }
      }
      withhold({
        kind,
        name,
        reason: "flagged_description",
        message: `${flagged} (${server}), so it is withheld`,
      });
    }
    return out;
  };

  const entries = new Map<string, Entry>();
  const toolDefinitions = new Map<string, string>();
  let listedTools: Array<Record<string, unknown>> = [];

  const refreshTools = coalesced(async () => {
    const items = await listAll(client, "tools/list", "tools");
    const accepted = await vet(
      "tool",
      items,
      ToolSchema,
      (item) => item.name,
      (name) => name,
      (name) =>
        reservedPrefix.test(name)
          ? "tool names may not start with prompt:, resource: or sampling: (the proxy's gate names for prompts, resources and sampling)"
          : undefined,
    );
    const listed: Array<Record<string, unknown>> = [];
    const seen = new Set<string>();
    for (const definition of accepted) {
      const name = definition.name as string;
      let validateOutput: ((value: unknown) => string[]) | undefined;
      if (definition.outputSchema !== undefined) {
        try {
          validateOutput = compileOutputSchema(definition.outputSchema, name, server);
        } catch (error) {
          withhold({
            kind: "tool",
            name,
            reason: "invalid_output_schema",
            message: `${(error as Error).message}; the host could not check its results, so it is withheld`,
          });
          continue;
        }
      }
      listed.push(definition);
      seen.add(name);
      const digest = JSON.stringify(definition);
      if (toolDefinitions.get(name) === digest && entries.has(name)) continue;
      toolDefinitions.set(name, digest);
      const flags = { reveal: true, ...options.toolDefaults, ...options.tools?.[name] };
      let validate: InputValidator | undefined;
      let unusable: string | undefined;
      try {
        validate = compileInputSchema(definition.inputSchema, name, server);
      } catch (error) {
        unusable = (error as Error).message;
        log(unusable);
      }
      entries.set(
        name,
        makeEntry({
          gateName: name,
          kind: "tool",
          description: typeof definition.description === "string" ? definition.description : "",
          inputSchema: definition.inputSchema as Record<string, unknown>,
          flags,
          ...(validate ? { validate } : {}),
          ...(unusable ? { unusable } : {}),
          ...(validateOutput ? { validateOutput } : {}),
          hasOutputSchema: definition.outputSchema !== undefined,
          perform: async (args, signal, timeoutMs, onprogress) => {
            const response = await client.request(
              { method: "tools/call", params: { name, arguments: args } },
              ResultSchema,
              {
                signal,
                timeout: timeoutMs + 1_000,
                ...(onprogress ? { onprogress, resetTimeoutOnProgress: true } : {}),
              },
            );
            const checked = CallToolResultSchema.safeParse(response);
            if (!checked.success)
              throw new ToolError(
                `[mcp] ${server} answered tool "${name}" with a malformed result (${firstLine(checked.error.message)})`,
              );
            return response as Record<string, unknown>;
          },
        }),
      );
    }
    for (const name of [...entries.keys()])
      if (!reservedPrefix.test(name) && !seen.has(name)) {
        entries.delete(name);
        toolDefinitions.delete(name);
      }
    listedTools = listed;
  });

  let listedPrompts: Array<Record<string, unknown>> = [];
  const refreshPrompts = coalesced(async () => {
    const items = await listAll(client, "prompts/list", "prompts");
    listedPrompts = await vet(
      "prompt",
      items,
      PromptSchema,
      (item) => item.name,
      (name) => `prompt:${name}`,
    );
    for (const key of [...entries.keys()]) if (key.startsWith("prompt:")) entries.delete(key);
    for (const prompt of listedPrompts) {
      const name = prompt.name as string;
      const argumentsList = Array.isArray(prompt.arguments)
        ? (prompt.arguments as Array<{ name: string; required?: boolean }>)
        : [];
      const inputSchema = {
        type: "object",
        properties: Object.fromEntries(
          argumentsList.map((item) => [item.name, { type: "string" }]),
        ),
        required: argumentsList.filter((item) => item.required).map((item) => item.name),
        additionalProperties: false,
      };
      entries.set(
        `prompt:${name}`,
        makeEntry({
          gateName: `prompt:${name}`,
          kind: "prompt",
          description: typeof prompt.description === "string" ? prompt.description : "",
          inputSchema,
          flags: { reveal: true, ...options.toolDefaults, ...options.tools?.[`prompt:${name}`] },
          validate: compileInputSchema(inputSchema, `prompt:${name}`, server),
          hasOutputSchema: false,
          perform: async (args, signal, timeoutMs) => {
            const response = await client.request(
              {
                method: "prompts/get",
                params: { name, arguments: args as Record<string, string> },
              },
              ResultSchema,
              { signal, timeout: timeoutMs + 1_000 },
            );
            const checked = GetPromptResultSchema.safeParse(response);
            if (!checked.success)
              throw new ToolError(
                `[mcp] ${server} answered prompt "${name}" with a malformed result (${firstLine(checked.error.message)})`,
              );
            return response as Record<string, unknown>;
          },
        }),
      );
    }
  });

  let listedResources: Array<Record<string, unknown>> = [];
  let listedTemplates: Array<Record<string, unknown>> = [];
  const refreshResources = coalesced(async () => {
    listedResources = await vet(
      "resource",
      await listAll(client, "resources/list", "resources"),
      ResourceSchema,
      (item) => item.uri,
      (uri) => `resource:${uri}`,
    );
  });
  const refreshTemplates = coalesced(async () => {
    listedTemplates = await vet(
      "resource template",
      await listAll(client, "resources/templates/list", "resourceTemplates"),
      ResourceTemplateSchema,
      (item) => item.uriTemplate,
      (template) => `resource:${template}`,
    );
  });
  /** Reading one URI: the listed ones, and any other (from a template) that passes the same name checks. */
  const resourceEntry = (uri: string): Entry | string => {
    const refused = withheldOf("resource", uri);
    if (refused)
      return `[mcp] resource ${JSON.stringify(uri)} is withheld by loopguard: ${refused.message}`;
    const gateName = `resource:${uri}`;
    const known = entries.get(gateName);
    if (known) return known;
    const problem = vetNames([uri], {
      kind: "resource",
      protectedPatterns,
      gateName: () => gateName,
    }).get(0);
    if (problem) return `[mcp] ${problem.message}; loopguard refuses to read it`;
    if (entries.size > 10_000)
      for (const key of entries.keys()) if (key.startsWith("resource:")) entries.delete(key);
    const inputSchema = {
      type: "object",
      properties: { uri: { type: "string" } },
      required: ["uri"],
      additionalProperties: false,
    };
    const entry = makeEntry({
      gateName,
      kind: "resource",
      description: `Read ${uri}`,
      inputSchema,
      flags: { reveal: true, ...options.toolDefaults },
      validate: compileInputSchema(inputSchema, gateName, server),
      hasOutputSchema: false,
      perform: async (args, signal, timeoutMs) => {
        const response = await client.request(
          { method: "resources/read", params: { uri: args.uri as string } },
          ResultSchema,
          { signal, timeout: timeoutMs + 1_000 },
        );
        const checked = ReadResourceResultSchema.safeParse(response);
        if (!checked.success)
          throw new ToolError(
            `[mcp] ${server} answered resources/read of ${JSON.stringify(uri)} with a malformed result (${firstLine(checked.error.message)})`,
          );
        return response as Record<string, unknown>;
      },
    });
    entries.set(gateName, entry);
    return entry;
  };

  let instructions = options.serverInstructions === "drop" ? undefined : client.getInstructions();
  if (instructions && scanner && options.serverInstructions !== "pass") {
    const flagged = await flaggedText({ description: instructions }, "instructions", server);
    if (flagged) {
      withhold({
        kind: "instructions",
        name: server,
        reason: "flagged_description",
        message: `the server's instructions were flagged as an injection by ${scanner.name} (${server}), so they are withheld`,
      });
      instructions = undefined;
    }
  }

  try {
    if (capabilities.tools) await refreshTools();
    if (capabilities.prompts) await refreshPrompts();
    if (capabilities.resources) {
      await refreshResources();
      await refreshTemplates().catch((error: Error) =>
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
  // One proxy process is one run, open until the proxy stops: every call enters it through
  // this bound function (the host's requests arrive outside any async context of ours).
  let run!: RunHandle;
  let enter!: <T>(fn: () => Promise<T>) => Promise<T>;
  let endRun!: () => void;
  const runEnded = new Promise<void>((resolve) => {
    endRun = resolve;
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

  function makeEntry(spec: {
    gateName: string;
    kind: ResultKind;
    description: string;
    inputSchema: Record<string, unknown>;
    flags: McpToolFlags;
    validate?: InputValidator;
    unusable?: string;
    validateOutput?: (value: unknown) => string[];
    hasOutputSchema: boolean;
    perform: (
      args: Record<string, unknown>,
      signal: AbortSignal,
      timeoutMs: number,
      onprogress?: (progress: Progress) => void,
    ) => Promise<Record<string, unknown>>;
  }): Entry {
    const stash = new Map<string, Stashed>();
    const take = (toolUseId: string) => {
      const stashed = stash.get(toolUseId);
      stash.delete(toolUseId);
      return stashed;
    };
    const label =
      spec.kind === "tool"
        ? `tool "${spec.gateName}"`
        : `${spec.kind} "${spec.gateName.slice(spec.gateName.indexOf(":") + 1)}"`;
    if (spec.unusable || !spec.validate)
      return {
        gateName: spec.gateName,
        label,
        unusable: spec.unusable ?? "[mcp] unusable",
        hasOutputSchema: spec.hasOutputSchema,
        take,
      };
    const timeoutMs = spec.flags.timeoutMs ?? 30_000;
    const what = spec.gateName;
    const tool: Tool<Record<string, unknown>, string> = Object.freeze({
      name: spec.gateName,
      description: spec.description || `MCP ${spec.kind} ${spec.gateName} from ${server}`,
      sensitive: spec.flags.sensitive ?? false,
      idempotent: spec.flags.idempotent ?? false,
      trust: spec.flags.trust === "trusted" ? "trusted" : "untrusted",
      reveal: spec.flags.reveal ?? true,
      timeoutMs,
      costUsd: 0,
      // The proxy cuts results itself (leaf by leaf, keeping the shape); this is above its cut.
      maxOutputChars: maxOutputChars + 1_000,
      spec: { name: spec.gateName, description: spec.description, input_schema: spec.inputSchema },
      parse: spec.validate,
      run: async (
        args: Record<string, unknown>,
        context: { signal: AbortSignal; toolUseId: string },
      ) => {
        let result: Record<string, unknown>;
        try {
          result = await spec.perform(
            args,
            context.signal,
            timeoutMs,
            progressOf.get(context.toolUseId),
          );
        } catch (error) {
          if (context.signal.aborted || error instanceof ToolError) throw error;
          throw new ToolError(
            `[mcp] ${server} failed ${spec.kind} "${what}": ${(error as Error).message ?? String(error)}`,
            { cause: error },
          );
        }
        const leaves = resultLeaves(result, spec.kind);
        const cut = capLeaves(result, leaves, maxOutputChars, what);
        if (cut)
          log(
            `[mcp-proxy] ${what}: cut ${cut.removedChars} of ${cut.chars} characters of its result (maxOutputChars ${maxOutputChars}, sha256 ${cut.sha256})`,
          );
        stash.set(context.toolUseId, { result, leaves, cut });
        return leavesText(leaves);
      },
    });
    return {
      gateName: spec.gateName,
      label,
      guarded: guardTool(tool, guardOptions),
      ...(spec.validateOutput ? { validateOutput: spec.validateOutput } : {}),
      hasOutputSchema: spec.hasOutputSchema,
      take,
    };
  }

  let calls = 0;
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work)).catch(() => {});
    return work;
  };

  /** Where the server's progress on a call goes (the host's progress token), by tool-use id. */
  const progressOf = new Map<string, (progress: Progress) => void>();

  /** A call through the pipeline, and the envelope on what a scan flagged. */
  const callEntry = async (
    entry: Entry,
    args: Record<string, unknown>,
    requestId: string | number,
    signal: AbortSignal,
    onProgress?: (progress: Progress) => void,
  ): Promise<Outcome> => {
    if (entry.unusable || !entry.guarded)
      return { type: "error", text: entry.unusable ?? "[mcp] unusable" };
    calls += 1;
    const toolUseId = `mcp_${calls}_${String(requestId)}`;
    const guarded = entry.guarded;
    if (onProgress) progressOf.set(toolUseId, onProgress);
    const outcome = await enter(() => guarded(args, { toolUseId, signal })).finally(() =>
      progressOf.delete(toolUseId),
    );
    if (outcome.type === "refused") {
      entry.take(toolUseId);
      const hints =
        outcome.fixHints.length > 0
          ? `\nWhat to do instead:\n- ${outcome.fixHints.join("\n- ")}`
          : "";
      return {
        type: "refused",
        text: `Refused by loopguard (${outcome.reason}): ${outcome.message}${hints}`,
      };
    }
    if (outcome.type === "error") {
      entry.take(toolUseId);
      return {
        type: "error",
        text: `[mcp] ${entry.label} failed (${outcome.kind}): ${outcome.message}`,
      };
    }
    const stashed = entry.take(toolUseId);
    if (!stashed)
      return { type: "error", text: `[mcp] ${entry.gateName}: the server's result was lost` };
    const flagged = outcome.scan !== undefined && outcome.scan.verdict !== "clean";
    if (flagged && scanner && envelope)
      await envelopeLeaves(stashed.leaves, scanner, envelope, {
        source: "tool_output",
        tool: entry.gateName,
        toolUseId,
        runId: run.runId,
      });
    return { type: "ok", stashed, flagged, toolUseId };
  };

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

  if (capabilities.tools) {
    host.setRequestHandler(ListToolsRequestSchema, async () => {
      await refreshTools();
      return { tools: listedTools as CallToolResult[] as never };
    });
    host.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      // The host asked for progress: the server's progress on this call is relayed under the
      // host's token.
      const token = request.params._meta?.progressToken;
      const onProgress =
        token === undefined
          ? undefined
          : (progress: Progress) => {
              void extra
                .sendNotification({
                  method: "notifications/progress",
                  params: { ...progress, progressToken: token },
                })
                .catch(() => {});
            };
      return track(
        callTool(request.params.name, request.params.arguments ?? {}, extra, onProgress),
      );
    });
  } else host.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));

  const callTool = async (
    name: string,
    args: Record<string, unknown>,
    extra: { requestId: string | number; signal: AbortSignal },
    onProgress?: (progress: Progress) => void,
  ): Promise<CallToolResult> => {
    let entry = entries.get(name);
    if (!entry && !withheldOf("tool", name)) {
      await refreshTools().catch(() => {});
      entry = entries.get(name);
    }
    const refused = withheldOf("tool", name);
    if (refused)
      return toolError(`[mcp] tool "${name}" is withheld by loopguard: ${refused.message}`);
    // `prompt:x` and the like name the proxy's own entries, never a tool the host may call.
    if (!entry || reservedPrefix.test(name))
      return toolError(
        `[mcp] unknown tool "${name}": ${server} lists ${listedTools.map((tool) => tool.name).join(", ") || "no tools"}. Call one of those.`,
      );
    const outcome = await callEntry(entry, args, extra.requestId, extra.signal, onProgress);
    if (outcome.type !== "ok") return toolError(outcome.text);
    const { result, cut } = outcome.stashed;
    const shaped = result as CallToolResult;
    if (entry.hasOutputSchema && !shaped.isError) {
      if (shaped.structuredContent === undefined)
        return toolError(
          `[mcp] tool "${name}" from ${server} declares an outputSchema but returned no structuredContent; the host would reject the result`,
        );
      const issues = entry.validateOutput?.(shaped.structuredContent) ?? [];
      if (issues.length > 0) {
        if (!cut && !outcome.flagged)
          return toolError(
            `[mcp] tool "${name}" from ${server} returned structuredContent that does not match its own outputSchema (${issues.slice(0, 3).join("; ")}); the result is refused`,
          );
        // Cutting or enveloping broke a constraint of the schema (a length, a pattern): the
        // host gets the text as an error result, which carries no structured content.
        const { structuredContent: _dropped, ...rest } = shaped;
        return {
          ...rest,
          content: [
            ...shaped.content,
            {
              type: "text",
              text: `[loopguard: the structured result was ${cut ? "cut" : "enveloped"} and no longer matches the tool's outputSchema (${issues[0]}); its text is above]`,
            },
          ],
          isError: true,
        };
      }
    }
    return shaped;
  };

  if (capabilities.prompts) {
    host.setRequestHandler(ListPromptsRequestSchema, async () => {
      await refreshPrompts();
      return { prompts: listedPrompts as never };
    });
    host.setRequestHandler(GetPromptRequestSchema, (request, extra) =>
      track(
        (async () => {
          const name = request.params.name;
          let entry = entries.get(`prompt:${name}`);
          if (!entry && !withheldOf("prompt", name)) {
            await refreshPrompts().catch(() => {});
            entry = entries.get(`prompt:${name}`);
          }
          const refused = withheldOf("prompt", name);
          if (refused)
            throw new McpError(
              ErrorCode.InvalidParams,
              `[mcp] prompt "${name}" is withheld by loopguard: ${refused.message}`,
            );
          if (!entry)
            throw new McpError(
              ErrorCode.InvalidParams,
              `[mcp] unknown prompt "${name}": ${server} lists ${listedPrompts.map((prompt) => prompt.name).join(", ") || "no prompts"}`,
            );
          const outcome = await callEntry(
            entry,
            { ...(request.params.arguments ?? {}) },
            extra.requestId,
            extra.signal,
          );
          if (outcome.type !== "ok") throw new McpError(ErrorCode.InvalidRequest, outcome.text);
          return outcome.stashed.result as never;
        })(),
      ),
    );
  }

  const subscribed = new Set<string>();
  if (capabilities.resources) {
    host.setRequestHandler(ListResourcesRequestSchema, async () => {
      await refreshResources();
      return { resources: listedResources as never };
    });
    host.setRequestHandler(ListResourceTemplatesRequestSchema, async () => {
      await refreshTemplates();
      return { resourceTemplates: listedTemplates as never };
    });
    host.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
      track(
        (async () => {
          const entry = resourceEntry(request.params.uri);
          if (typeof entry === "string") throw new McpError(ErrorCode.InvalidParams, entry);
          const outcome = await callEntry(
            entry,
            { uri: request.params.uri },
            extra.requestId,
            extra.signal,
          );
          if (outcome.type !== "ok") throw new McpError(ErrorCode.InvalidRequest, outcome.text);
          return outcome.stashed.result as never;
        })(),
      ),
    );
    if (capabilities.resources.subscribe) {
      host.setRequestHandler(SubscribeRequestSchema, async (request) => {
        const entry = resourceEntry(request.params.uri);
        if (typeof entry === "string") throw new McpError(ErrorCode.InvalidParams, entry);
        await client.subscribeResource({ uri: request.params.uri });
        subscribed.add(request.params.uri);
        return {};
      });
      host.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
        subscribed.delete(request.params.uri);
        await client.unsubscribeResource({ uri: request.params.uri });
        return {};
      });
    }
  }

  if (options.sampling === "pass") {
    const samplingSchema = { type: "object" };
    const sampling = makeEntry({
      gateName: "sampling:createMessage",
      kind: "sampling",
      description: `${server} asks the host's model for a completion`,
      inputSchema: samplingSchema,
      flags: {
        reveal: true,
        ...options.toolDefaults,
        ...options.tools?.["sampling:createMessage"],
      },
      validate: compileInputSchema(samplingSchema, "sampling:createMessage", server),
      hasOutputSchema: false,
      perform: async (args, signal, timeoutMs) => {
        if (!host.getClientCapabilities()?.sampling)
          throw new ToolError(
            `[mcp] ${server} asked for sampling, which the host does not support`,
          );
        return (await host.createMessage(args as never, {
          signal,
          timeout: timeoutMs + 1_000,
        })) as unknown as Record<string, unknown>;
      },
    });
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
      track(
        (async () => {
          const outcome = await callEntry(
            sampling,
            { ...request.params },
            extra.requestId,
            extra.signal,
          );
          if (outcome.type !== "ok") throw new McpError(ErrorCode.InvalidRequest, outcome.text);
          return outcome.stashed.result as never;
        })(),
      ),
    );
  }

  if (capabilities.logging) {
    // Log messages are for the host's user (not the model): relayed as they are, at the level
    // the host sets.
    host.setRequestHandler(SetLevelRequestSchema, async (request) => {
      await client.setLoggingLevel(request.params.level);
      return {};
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (notification) => {
      await host.sendLoggingMessage(notification.params).catch(() => {});
    });
  }

  // ---- notifications from the server ------------------------------------------------------
  const relay =
    (refresh: () => Promise<void>, send: () => Promise<void>, what: string) => async () => {
      // Refreshed first, so what is withheld is logged before the host asks again.
      await refresh().catch((error: Error) =>
        log(`[mcp] ${server} failed ${what}: ${error.message}`),
      );
      await send().catch(() => {});
    };
  client.setNotificationHandler(
    ToolListChangedNotificationSchema,
    relay(refreshTools, () => host.sendToolListChanged(), "tools/list"),
  );
  client.setNotificationHandler(
    PromptListChangedNotificationSchema,
    relay(refreshPrompts, () => host.sendPromptListChanged(), "prompts/list"),
  );
  client.setNotificationHandler(
    ResourceListChangedNotificationSchema,
    relay(
      async () => {
        await refreshResources();
        await refreshTemplates().catch(() => {});
      },
      () => host.sendResourceListChanged(),
      "resources/list",
    ),
  );
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (notification) => {
    if (subscribed.has(notification.params.uri))
      await host.sendResourceUpdated({ uri: notification.params.uri }).catch(() => {});
  });

  // ---- stopping -----------------------------------------------------------------------------
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
    if (reason !== "host_closed" && inFlight.size > 0)
      await Promise.race([Promise.allSettled([...inFlight]), sleep(2_000)]);
    await host.close().catch(() => {});
    // An embedded proxy's output stream ends with it, so its host sees the end too.
    if (options.stdout && options.stdout !== process.stdout) options.stdout.end();
    // The run ends with the proxy, stopped: its open approvals are withdrawn (nobody can make
    // the identical call any more), and the log says why.
    stopRun(
      run,
      reason === "host_closed"
        ? "host_disconnected"
        : reason === "server_exited"
          ? "server_exited"
          : "proxy_closed",
      message,
    );
    endRun();
    // The run ends before the server is closed: a host that sends SIGTERM soon after it closes
    // stdin (the SDK's does, after 2 s) must not find the run still open, and a server that
    // ignores its own SIGTERM cannot hold the log hostage. A call still waiting on the server
    // ends when the server is closed, so the wait before closing is bounded.
    const ended = runFinished.then(
      () => undefined,
      (error: Error) => log(`[mcp] the proxy's run could not be ended: ${error.message}`),
    );
    await Promise.race([ended, sleep(1_000)]);
    await client.close().catch(() => {});
    await ended;
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
    withheld: () => [...withheld.values()],
    close: () => stop("closed", "[mcp] proxy closed"),
  };
}

/**
 * One run of `work` at a time: a call while it runs waits for it and for one more run after it
 * (so what changed meanwhile is seen), however many calls arrive (a server flooding
 * `list_changed` costs one list at a time).
 */
function coalesced(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again: Promise<void> | undefined;
  return () => {
    if (!running) {
      running = work().finally(() => {
        running = undefined;
      });
      return running;
    }
    again ??= running
      .catch(() => {})
      .then(() => {
        again = undefined;
        running = work().finally(() => {
          running = undefined;
        });
        return running;
      });
    return again;
  };
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

/** Every page of a list request (`nextCursor`), parsed loosely: items are checked one by one. */
async function listAll(client: Client, method: string, key: string): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1_000; page += 1) {
    const result = (await client.request(
      { method, params: cursor ? { cursor } : {} } as never,
      ResultSchema,
    )) as Record<string, unknown>;
    const list = result[key];
    if (!Array.isArray(list))
      throw new Error(
        `${method} answered without a ${key} array (got ${JSON.stringify(list)?.slice(0, 80)})`,
      );
    items.push(...list);
    cursor =
      typeof result.nextCursor === "string" && result.nextCursor !== ""
        ? result.nextCursor
        : undefined;
    if (!cursor) return items;
  }
  throw new Error(`${method} returned more than 1000 pages`);
}

/**
 * The tool globs the gates name: policy rules (`rules: [{ tool }]`), rate limits (`limits: [{
 * tool }]`) and the RunGuard's irreversible tools (`settings.irreversibleTools`), read from any
 * gate that has them.
 */
function ruleToolNames(gates: readonly Gate[]): string[] {
  const names: string[] = [];
  const add = (tool: unknown) => {
    for (const name of Array.isArray(tool) ? tool : [tool])
      if (typeof name === "string" && name !== "" && name !== "*") names.push(name);
  };
  for (const gate of gates) {
    const holder = gate as {
      rules?: unknown;
      limits?: unknown;
      settings?: { irreversibleTools?: unknown };
    };
    for (const list of [holder.rules, holder.limits])
      if (Array.isArray(list))
        for (const item of list) add((item as { tool?: unknown } | null)?.tool);
    add(holder.settings?.irreversibleTools);
  }
  return names;
}

/** The prose of a definition a model reads: every string in it but its name, URI, MIME type, icons and `_meta`. */
function proseOf(item: Record<string, unknown>): string {
  const out: string[] = [];
  const skip = new Set([
    "name",
    "uri",
    "uriTemplate",
    "mimeType",
    "icons",
    "_meta",
    "type",
    "$schema",
    "$ref",
    "$id",
  ]);
  const walk = (value: unknown, depth: number) => {
    if (depth > 64) return;
    if (typeof value === "string") out.push(value);
    else if (Array.isArray(value)) for (const child of value) walk(child, depth + 1);
    else if (isRecord(value))
      for (const [key, child] of Object.entries(value)) if (!skip.has(key)) walk(child, depth + 1);
  };
  walk(item, 0);
  return out.join("\n");
}

/** A copy of a definition with a neutral description and no prose in its schemas. */
function neutralCopy(item: Record<string, unknown>, description: string): Record<string, unknown> {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (!isRecord(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value))
      if (!["description", "title", "examples", "default", "$comment"].includes(key))
        out[key] = strip(child);
    return out;
  };
  const copy = strip(item) as Record<string, unknown>;
  copy.description = description;
  if (isRecord(item.annotations)) copy.annotations = { ...(strip(item.annotations) as object) };
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function firstLine(text: string | undefined): string {
  const line = (text ?? "").replace(/\s+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
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
