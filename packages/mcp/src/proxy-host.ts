import { ToolError } from "@loopguard/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CreateMessageRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  type Progress,
  PromptListChangedNotificationSchema,
  ReadResourceRequestSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  ToolListChangedNotificationSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { compileInputSchema } from "./input-validator.js";
import type { McpProxyOptions } from "./mcp-proxy-options.js";
import type { ProxyCalls } from "./proxy-calls.js";
import { type ProxyCatalog, reservedPrefix } from "./proxy-catalog.js";
import type { Entry, Outcome } from "./proxy-entry.js";
import { toolError } from "./proxy-support.js";

/** What the host side of one proxy is wired from. */
export interface ProxyHostParts {
  host: Server;
  client: Client;
  catalog: ProxyCatalog;
  calls: ProxyCalls;
  options: McpProxyOptions;
  log: (line: string) => void;
}

/** The server's capabilities the proxy relays. */
type Capabilities = ReturnType<Client["getServerCapabilities"]> & {};

/**
 * Wires the host's requests to the catalog and the pipeline, kind by kind as the server offers
 * them (tools, prompts, resources, sampling, logging), and relays the server's notifications.
 */
export function serveHost(parts: ProxyHostParts, capabilities: Capabilities): void {
  if (capabilities.tools) serveTools(parts);
  else parts.host.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
  if (capabilities.prompts) servePrompts(parts);
  const subscribed = new Set<string>();
  if (capabilities.resources)
    serveResources(parts, capabilities.resources.subscribe === true, subscribed);
  if (parts.options.sampling === "pass") relaySampling(parts);
  if (capabilities.logging) {
    // Log messages are for the host's user (not the model): relayed as they are, at the level
    // the host sets.
    parts.host.setRequestHandler(SetLevelRequestSchema, async (request) => {
      await parts.client.setLoggingLevel(request.params.level);
      return {};
    });
    parts.client.setNotificationHandler(LoggingMessageNotificationSchema, async (notification) => {
      await parts.host.sendLoggingMessage(notification.params).catch(() => {});
    });
  }
  relayNotifications(parts, subscribed);
}

function serveTools(parts: ProxyHostParts): void {
  const { host, catalog, calls } = parts;
  host.setRequestHandler(ListToolsRequestSchema, async () => {
    await catalog.refreshTools();
    return { tools: catalog.listedTools as CallToolResult[] as never };
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
    return calls.track(
      callTool(parts, request.params.name, request.params.arguments ?? {}, extra, onProgress),
    );
  });
}

/** `tools/call`: the entry's pipeline, then the result checked against the tool's outputSchema. */
async function callTool(
  parts: ProxyHostParts,
  name: string,
  args: Record<string, unknown>,
  extra: { requestId: string | number; signal: AbortSignal },
  onProgress?: (progress: Progress) => void,
): Promise<CallToolResult> {
  const { catalog, calls } = parts;
  const server = catalog.server;
  let entry = catalog.entries.get(name);
  if (!entry && !catalog.withheldOf("tool", name)) {
    await catalog.refreshTools().catch(() => {});
    entry = catalog.entries.get(name);
  }
  const refused = catalog.withheldOf("tool", name);
  if (refused)
    return toolError(`[mcp] tool "${name}" is withheld by loopguard: ${refused.message}`);
  // `prompt:x` and the like name the proxy's own entries, never a tool the host may call.
  if (!entry || reservedPrefix.test(name))
    return toolError(
      `[mcp] unknown tool "${name}": ${server} lists ${catalog.listedTools.map((tool) => tool.name).join(", ") || "no tools"}. Call one of those.`,
    );
  const outcome = await calls.call(entry, args, extra.requestId, extra.signal, onProgress);
  if (outcome.type !== "ok") return toolError(outcome.text);
  return checkedOutput(entry, name, server, outcome);
}

/** A tool result against its own outputSchema: as it is, refused, or its text as an error. */
function checkedOutput(
  entry: Entry,
  name: string,
  server: string,
  outcome: Extract<Outcome, { type: "ok" }>,
): CallToolResult {
  const { result, cut } = outcome.stashed;
  const shaped = result as CallToolResult;
  if (!entry.hasOutputSchema || shaped.isError) return shaped;
  if (shaped.structuredContent === undefined)
    return toolError(
      `[mcp] tool "${name}" from ${server} declares an outputSchema but returned no structuredContent; the host would reject the result`,
    );
  const issues = entry.validateOutput?.(shaped.structuredContent) ?? [];
  if (issues.length === 0) return shaped;
  if (!cut && !outcome.flagged)
    return toolError(
      `[mcp] tool "${name}" from ${server} returned structuredContent that does not match its own outputSchema (${issues.slice(0, 3).join("; ")}); the result is refused`,
    );
  // Cutting or enveloping broke a constraint of the schema (a length, a pattern): the host gets
  // the text as an error result, which carries no structured content.
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

/** A call's result for a JSON-RPC request (prompts, resources, sampling): a refusal is an error. */
async function resultOf(
  calls: ProxyCalls,
  entry: Entry,
  args: Record<string, unknown>,
  extra: { requestId: string | number; signal: AbortSignal },
): Promise<never> {
  const outcome = await calls.call(entry, args, extra.requestId, extra.signal);
  if (outcome.type !== "ok") throw new McpError(ErrorCode.InvalidRequest, outcome.text);
  return outcome.stashed.result as never;
}

function servePrompts(parts: ProxyHostParts): void {
  const { host, catalog, calls } = parts;
  host.setRequestHandler(ListPromptsRequestSchema, async () => {
    await catalog.refreshPrompts();
    return { prompts: catalog.listedPrompts as never };
  });
  host.setRequestHandler(GetPromptRequestSchema, (request, extra) =>
    calls.track(
      (async () => {
        const name = request.params.name;
        let entry = catalog.entries.get(`prompt:${name}`);
        if (!entry && !catalog.withheldOf("prompt", name)) {
          await catalog.refreshPrompts().catch(() => {});
          entry = catalog.entries.get(`prompt:${name}`);
        }
        const refused = catalog.withheldOf("prompt", name);
        if (refused)
          throw new McpError(
            ErrorCode.InvalidParams,
            `[mcp] prompt "${name}" is withheld by loopguard: ${refused.message}`,
          );
        if (!entry)
          throw new McpError(
            ErrorCode.InvalidParams,
            `[mcp] unknown prompt "${name}": ${catalog.server} lists ${catalog.listedPrompts.map((prompt) => prompt.name).join(", ") || "no prompts"}`,
          );
        return resultOf(calls, entry, { ...(request.params.arguments ?? {}) }, extra);
      })(),
    ),
  );
}

function serveResources(parts: ProxyHostParts, subscribe: boolean, subscribed: Set<string>): void {
  const { host, client, catalog, calls } = parts;
  host.setRequestHandler(ListResourcesRequestSchema, async () => {
    await catalog.refreshResources();
    return { resources: catalog.listedResources as never };
  });
  host.setRequestHandler(ListResourceTemplatesRequestSchema, async () => {
    await catalog.refreshTemplates();
    return { resourceTemplates: catalog.listedTemplates as never };
  });
  host.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
    calls.track(
      (async () => {
        const entry = catalog.resourceEntry(request.params.uri);
        if (typeof entry === "string") throw new McpError(ErrorCode.InvalidParams, entry);
        return resultOf(calls, entry, { uri: request.params.uri }, extra);
      })(),
    ),
  );
  if (!subscribe) return;
  host.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const entry = catalog.resourceEntry(request.params.uri);
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

/** The server's sampling requests, through the gates as `sampling:createMessage`, to the host. */
function relaySampling(parts: ProxyHostParts): void {
  const { host, client, catalog, calls, options } = parts;
  const server = catalog.server;
  const samplingSchema = { type: "object" };
  const sampling = catalog.entry({
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
        throw new ToolError(`[mcp] ${server} asked for sampling, which the host does not support`);
      return (await host.createMessage(args as never, {
        signal,
        timeout: timeoutMs + 1_000,
      })) as unknown as Record<string, unknown>;
    },
  });
  client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
    calls.track(resultOf(calls, sampling, { ...request.params }, extra)),
  );
}

/** The server's list_changed and resource updates, refreshed first and then passed on. */
function relayNotifications(parts: ProxyHostParts, subscribed: ReadonlySet<string>): void {
  const { host, client, catalog, log } = parts;
  const relay =
    (refresh: () => Promise<void>, send: () => Promise<void>, what: string) => async () => {
      // Refreshed first, so what is withheld is logged before the host asks again.
      await refresh().catch((error: Error) =>
        log(`[mcp] ${catalog.server} failed ${what}: ${error.message}`),
      );
      await send().catch(() => {});
    };
  client.setNotificationHandler(
    ToolListChangedNotificationSchema,
    relay(catalog.refreshTools, () => host.sendToolListChanged(), "tools/list"),
  );
  client.setNotificationHandler(
    PromptListChangedNotificationSchema,
    relay(catalog.refreshPrompts, () => host.sendPromptListChanged(), "prompts/list"),
  );
  client.setNotificationHandler(
    ResourceListChangedNotificationSchema,
    relay(
      async () => {
        await catalog.refreshResources();
        await catalog.refreshTemplates().catch(() => {});
      },
      () => host.sendResourceListChanged(),
      "resources/list",
    ),
  );
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (notification) => {
    if (subscribed.has(notification.params.uri))
      await host.sendResourceUpdated({ uri: notification.params.uri }).catch(() => {});
  });
}
