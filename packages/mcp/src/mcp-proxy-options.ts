import type { Readable, Writable } from "node:stream";
import type { Gate, RunHandle, WithRunContext } from "@loopguard/core";
import type { GuardMcpToolsOptions } from "./guard-mcp-tools.js";
import type { McpToolFlags } from "./mcp-tool.js";
import type { NameRefusal } from "./vet-names.js";

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
  /** The policy gate (e.g. `loadPolicyFile("policy.json")` from `@loopguard/policy/node`); runs before `gates`. */
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
