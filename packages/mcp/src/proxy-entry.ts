import { type GuardedTool, guardTool, type Tool, ToolError } from "@loopguard/core";
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import type { InputValidator } from "./input-validator.js";
import type { McpToolFlags } from "./mcp-tool.js";
import {
  capLeaves,
  type LeavesCut,
  leavesText,
  type ResultKind,
  type ResultLeaf,
  resultLeaves,
} from "./result-leaves.js";

/** One thing the proxy lets the host call: a tool, a prompt, a resource, or sampling. */
export interface Entry {
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

/** The server's result of one call, kept whole beside the text the pipeline saw. */
export interface Stashed {
  result: Record<string, unknown>;
  leaves: ResultLeaf[];
  cut: LeavesCut | undefined;
}

/** How one call through the pipeline ended. */
export type Outcome =
  | { type: "ok"; stashed: Stashed; flagged: boolean; toolUseId: string }
  | { type: "refused"; text: string }
  | { type: "error"; text: string };

/** What every entry of one proxy shares. */
export interface EntryContext {
  /** `MCP server "name"`, for messages. */
  server: string;
  maxOutputChars: number;
  /** The pipeline's options (the proxy envelopes flagged strings itself, so no envelope). */
  guardOptions: Parameters<typeof guardTool>[1];
  /** Where the server's progress on a call goes (the host's progress token), by tool-use id. */
  progressOf: ReadonlyMap<string, (progress: Progress) => void>;
  log: (line: string) => void;
}

/** How to build one entry: what the host and gates see of it, and how the server performs it. */
export interface EntrySpec {
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
}

/**
 * Builds an entry: a guarded loopguard tool whose `run` asks the server, cuts the result leaf by
 * leaf (keeping its shape) and stashes it whole for the host, handing the pipeline its text.
 * An entry whose input schema did not compile is unusable: its calls are refused.
 */
export function makeEntry(context: EntryContext, spec: EntrySpec): Entry {
  const { server, maxOutputChars, log } = context;
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
      runContext: { signal: AbortSignal; toolUseId: string },
    ) => {
      let result: Record<string, unknown>;
      try {
        result = await spec.perform(
          args,
          runContext.signal,
          timeoutMs,
          context.progressOf.get(runContext.toolUseId),
        );
      } catch (error) {
        if (runContext.signal.aborted || error instanceof ToolError) throw error;
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
      stash.set(runContext.toolUseId, { result, leaves, cut });
      return leavesText(leaves);
    },
  });
  return {
    gateName: spec.gateName,
    label,
    guarded: guardTool(tool, context.guardOptions),
    ...(spec.validateOutput ? { validateOutput: spec.validateOutput } : {}),
    hasOutputSchema: spec.hasOutputSchema,
    take,
  };
}
