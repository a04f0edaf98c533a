import type { Scanner } from "@loopguard/core";
import { ToolError } from "@loopguard/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  GetPromptResultSchema,
  PromptSchema,
  ReadResourceResultSchema,
  ResourceSchema,
  ResourceTemplateSchema,
  ResultSchema,
  ToolSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { compileInputSchema, compileOutputSchema, type InputValidator } from "./input-validator.js";
import type { McpProxyOptions, McpWithheld } from "./mcp-proxy-options.js";
import { type Entry, type EntryContext, type EntrySpec, makeEntry } from "./proxy-entry.js";
import {
  coalesced,
  firstLine,
  isRecord,
  listAll,
  neutralCopy,
  proseOf,
  ruleToolNames,
} from "./proxy-support.js";
import { vetNames } from "./vet-names.js";

/** Tool names may not take the prefixes of the proxy's own gate names. */
export const reservedPrefix = /^(prompt|resource|sampling):/;

/** What a list's item must parse as before its name is vetted. */
type Shape = { safeParse(value: unknown): { success: boolean; error?: { message: string } } };

/**
 * The proxy's catalog: what the server lists (tools, prompts, resources, templates, its
 * instructions), vetted before the host sees it. Names with invisible characters, non-canonical
 * forms, duplicates or look-alikes of each other or of a protected name are withheld, and so is
 * a definition the scanner flags (or it is listed neutrally); each listed item is an `Entry`
 * the host's calls go through. Each list is refreshed one at a time (`coalesced`).
 */
export class ProxyCatalog {
  /** Every entry by gate name (`send_email`, `prompt:review`, `resource:file:///a.txt`). */
  readonly entries = new Map<string, Entry>();
  listedTools: Array<Record<string, unknown>> = [];
  listedPrompts: Array<Record<string, unknown>> = [];
  listedResources: Array<Record<string, unknown>> = [];
  listedTemplates: Array<Record<string, unknown>> = [];
  readonly refreshTools = coalesced(() => this.#refreshTools());
  readonly refreshPrompts = coalesced(() => this.#refreshPrompts());
  readonly refreshResources = coalesced(async () => {
    this.listedResources = await this.#vet(
      "resource",
      await listAll(this.#client, "resources/list", "resources"),
      ResourceSchema,
      (item) => item.uri,
      (uri) => `resource:${uri}`,
    );
  });
  readonly refreshTemplates = coalesced(async () => {
    this.listedTemplates = await this.#vet(
      "resource template",
      await listAll(this.#client, "resources/templates/list", "resourceTemplates"),
      ResourceTemplateSchema,
      (item) => item.uriTemplate,
      (template) => `resource:${template}`,
    );
  });
  readonly #client: Client;
  readonly #options: McpProxyOptions;
  readonly #entryContext: EntryContext;
  readonly #scanner: Scanner | undefined;
  readonly #protectedPatterns: string[];
  readonly #withheld = new Map<string, McpWithheld>();
  readonly #reported = new Set<string>();
  readonly #toolDefinitions = new Map<string, string>();

  constructor(parts: {
    client: Client;
    options: McpProxyOptions;
    entryContext: EntryContext;
    gates: Parameters<typeof ruleToolNames>[0];
  }) {
    this.#client = parts.client;
    this.#options = parts.options;
    this.#entryContext = parts.entryContext;
    this.#scanner = parts.options.scanner;
    this.#protectedPatterns = [
      ...new Set([
        ...(parts.options.protectedNames ?? []),
        ...Object.keys(parts.options.tools ?? {}),
        ...ruleToolNames(parts.gates),
      ]),
    ];
  }

  /** `MCP server "name"`, for messages. */
  get server(): string {
    return this.#entryContext.server;
  }

  /** What the proxy currently keeps from the host. */
  withheldList(): McpWithheld[] {
    return [...this.#withheld.values()];
  }

  /** Why an item is withheld, if it is. */
  withheldOf(kind: McpWithheld["kind"], name: string): McpWithheld | undefined {
    return this.#withheld.get(`${kind}\u0000${name}`);
  }

  /** Keeps an item from the host, logging why the first time. */
  withhold(item: McpWithheld): void {
    const key = `${item.kind}\u0000${item.name}`;
    this.#withheld.set(key, item);
    const line = `${item.kind}:${item.name}:${item.message}`;
    if (!this.#reported.has(line)) {
      this.#reported.add(line);
      this.#entryContext.log(`[mcp-proxy] withheld from the host: ${item.message}`);
    }
  }

  /** An entry for this proxy (sampling's is made by the host side). */
  entry(spec: EntrySpec): Entry {
    return makeEntry(this.#entryContext, spec);
  }

  /**
   * The server's instructions as the host may see them: dropped, passed, or scanned and
   * withheld when the scanner flags them.
   */
  async instructions(): Promise<string | undefined> {
    const options = this.#options;
    const instructions =
      options.serverInstructions === "drop" ? undefined : this.#client.getInstructions();
    if (!instructions || !this.#scanner || options.serverInstructions === "pass")
      return instructions;
    const flagged = await this.#flaggedText(
      { description: instructions },
      "instructions",
      this.server,
    );
    if (!flagged) return instructions;
    this.withhold({
      kind: "instructions",
      name: this.server,
      reason: "flagged_description",
      message: `the server's instructions were flagged as an injection by ${this.#scanner.name} (${this.server}), so they are withheld`,
    });
    return undefined;
  }

  /** Reading one URI: the listed ones, and any other (from a template) that passes the same name checks. */
  resourceEntry(uri: string): Entry | string {
    const refused = this.withheldOf("resource", uri);
    if (refused)
      return `[mcp] resource ${JSON.stringify(uri)} is withheld by loopguard: ${refused.message}`;
    const gateName = `resource:${uri}`;
    const entries = this.entries;
    const known = entries.get(gateName);
    if (known) return known;
    const problem = vetNames([uri], {
      kind: "resource",
      protectedPatterns: this.#protectedPatterns,
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
    const server = this.server;
    const entry = this.entry({
      gateName,
      kind: "resource",
      description: `Read ${uri}`,
      inputSchema,
      flags: { reveal: true, ...this.#options.toolDefaults },
      validate: compileInputSchema(inputSchema, gateName, server),
      hasOutputSchema: false,
      perform: async (args, signal, timeoutMs) => {
        const response = await this.#client.request(
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
  }

  async #refreshTools(): Promise<void> {
    const server = this.server;
    const items = await listAll(this.#client, "tools/list", "tools");
    const accepted = await this.#vet(
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
          this.withhold({
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
      if (this.#toolDefinitions.get(name) === digest && this.entries.has(name)) continue;
      this.#toolDefinitions.set(name, digest);
      this.entries.set(name, this.#toolEntry(definition, name, validateOutput));
    }
    for (const name of [...this.entries.keys()])
      if (!reservedPrefix.test(name) && !seen.has(name)) {
        this.entries.delete(name);
        this.#toolDefinitions.delete(name);
      }
    this.listedTools = listed;
  }

  #toolEntry(
    definition: Record<string, unknown>,
    name: string,
    validateOutput: ((value: unknown) => string[]) | undefined,
  ): Entry {
    const options = this.#options;
    const server = this.server;
    const flags = { reveal: true, ...options.toolDefaults, ...options.tools?.[name] };
    let validate: InputValidator | undefined;
    let unusable: string | undefined;
    try {
      validate = compileInputSchema(definition.inputSchema, name, server);
    } catch (error) {
      unusable = (error as Error).message;
      this.#entryContext.log(unusable);
    }
    return this.entry({
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
        const response = await this.#client.request(
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
    });
  }

  async #refreshPrompts(): Promise<void> {
    const options = this.#options;
    const server = this.server;
    const items = await listAll(this.#client, "prompts/list", "prompts");
    this.listedPrompts = await this.#vet(
      "prompt",
      items,
      PromptSchema,
      (item) => item.name,
      (name) => `prompt:${name}`,
    );
    for (const key of [...this.entries.keys()])
      if (key.startsWith("prompt:")) this.entries.delete(key);
    for (const prompt of this.listedPrompts) {
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
      this.entries.set(
        `prompt:${name}`,
        this.entry({
          gateName: `prompt:${name}`,
          kind: "prompt",
          description: typeof prompt.description === "string" ? prompt.description : "",
          inputSchema,
          flags: { reveal: true, ...options.toolDefaults, ...options.tools?.[`prompt:${name}`] },
          validate: compileInputSchema(inputSchema, `prompt:${name}`, server),
          hasOutputSchema: false,
          perform: async (args, signal, timeoutMs) => {
            const response = await this.#client.request(
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
  }

  async #flaggedText(
    item: Record<string, unknown>,
    kind: string,
    name: string,
  ): Promise<string | undefined> {
    const scanner = this.#scanner;
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
  }

  /** Vets one kind's items; returns those the host may see (the server's objects, or neutral copies). */
  async #vet(
    kind: McpWithheld["kind"],
    items: readonly unknown[],
    shape: Shape,
    nameOf: (item: Record<string, unknown>) => unknown,
    gateName: (name: string) => string,
    reserved?: (name: string) => string | undefined,
  ): Promise<Array<Record<string, unknown>>> {
    const server = this.server;
    for (const [key, item] of this.#withheld) if (item.kind === kind) this.#withheld.delete(key);
    const shaped: Array<Record<string, unknown> | undefined> = items.map((item) => {
      const parsed = shape.safeParse(item);
      if (parsed.success) return item as Record<string, unknown>;
      const name = isRecord(item) ? String(nameOf(item) ?? "?") : "?";
      this.withhold({
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
        protectedPatterns: this.#protectedPatterns,
        gateName,
        ...(reserved ? { reserved } : {}),
      },
    );
    const out: Array<Record<string, unknown>> = [];
    for (const [index, item] of present.entries()) {
      const refusal = refusals.get(index);
      if (refusal) {
        this.withhold({
          kind,
          name: refusal.name,
          reason: refusal.reason,
          message: `${refusal.message} (${server})`,
        });
        continue;
      }
      const shown = await this.#flaggedOrShown(kind, item, nameOf(item) as string);
      if (shown) out.push(shown);
    }
    return out;
  }

  /** An item the scanner does not flag as it is; a flagged one neutral (if so set) or withheld. */
  async #flaggedOrShown(
    kind: McpWithheld["kind"],
    item: Record<string, unknown>,
    name: string,
  ): Promise<Record<string, unknown> | undefined> {
    const server = this.server;
    const flagged = await this.#flaggedText(item, kind, name);
    if (!flagged) return item;
    if ((this.#options.flaggedDescriptions ?? "withhold") === "neutral") {
      const neutral = neutralCopy(
        item,
        `${kind} ${name} from ${server} (loopguard withheld its description: a scanner flagged it).`,
      );
      if (!(await this.#flaggedText(neutral, kind, name))) {
        this.#entryContext.log(
          `[mcp-proxy] ${flagged} (${server}); the host gets a neutral description`,
        );
        return neutral;
      }
    }
    this.withhold({
      kind,
      name,
      reason: "flagged_description",
      message: `${flagged} (${server}), so it is withheld`,
    });
    return undefined;
  }
}
