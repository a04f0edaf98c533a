import { jsonlEventStore } from "@loopguard/checkpoint";
import type { StoredEvent } from "@loopguard/core";
import { defaultScanner, quarantine, taintGate } from "@loopguard/injection";
import { runMcpProxy } from "@loopguard/mcp";
import { loadPolicyFile } from "@loopguard/policy/node";
import { createVault, redactDeep } from "@loopguard/redact";
import type { Command } from "commander";
import type { CliShared } from "../cli-context.js";
import { UsageError } from "../usage-error.js";

/**
 * `loopguard mcp-proxy --policy policy.json [--store DIR] -- <command> [args...]`: an MCP
 * server on stdio in front of the real one. Stdout is the MCP protocol, so everything this
 * command says goes to stderr.
 */
export function register(program: Command, { exit }: CliShared): void {
  program
    .command("mcp-proxy")
    .description(
      "put loopguard's gates in front of an MCP server: run this as the server in your MCP host's config",
    )
    .requiredOption(
      "--policy <file>",
      "the policy JSON (rules, roles, RunGuard) every tools/call passes",
    )
    .option(
      "--store <dir>",
      "log the proxy's run there (one process, one run); asks then wait for: loopguard approve <runId> --dir <dir>",
    )
    .option("--run-id <id>", "the run's id (default: a new one per process)")
    .option("--agent <name>", "the agent id gates and the log see", "mcp-proxy")
    .option(
      "--task <text>",
      "trusted text (the user's request) for sinks that require trusted values; the proxy never sees the user's task",
    )
    .option("--sensitive <tools>", "comma-separated tools the taint gate guards", "")
    .option("--timeout-ms <ms>", "abandon a tools/call after this long", "30000")
    .option(
      "--max-output-chars <n>",
      "most characters of text one result passes to the host (the rest is cut, with a marker and a digest)",
      "100000",
    )
    .option(
      "--max-message-bytes <n>",
      "largest message accepted from the server; a larger one is dropped and its call refused",
      String(8 * 1024 * 1024),
    )
    .option(
      "--flagged-descriptions <mode>",
      "a tool, prompt or resource whose description the scanner flags: withhold or neutral",
      "withhold",
    )
    .option(
      "--server-instructions <mode>",
      "the server's instructions: scan (withheld when flagged), pass or drop",
      "scan",
    )
    .option(
      "--sampling <mode>",
      "the server's sampling requests: refuse (offer none) or pass (through the gates as sampling:createMessage)",
      "refuse",
    )
    .option(
      "--protect <names>",
      "comma-separated tool names a look-alike must not pass as (the policy's rule names are protected already)",
      "",
    )
    .argument("<command>", "the real MCP server's command (after --)")
    .argument("[args...]", "its arguments")
    .addHelpText(
      "after",
      '\nExample (Claude Desktop\'s config): "command": "loopguard", "args": ["mcp-proxy", "--policy", "policy.json", "--", "npx", "-y", "some-mcp-server"]',
    )
    .action((command: string, args: string[], options: McpProxyFlags) =>
      proxy(command, args, options, exit),
    );
}

/** The flags of `loopguard mcp-proxy`, as commander parses them. */
interface McpProxyFlags {
  policy: string;
  store?: string;
  runId?: string;
  agent: string;
  task?: string;
  sensitive: string;
  timeoutMs: string;
  maxOutputChars: string;
  maxMessageBytes: string;
  flaggedDescriptions: string;
  serverInstructions: string;
  protect: string;
  sampling: string;
}

/** Checks the flags that take numbers or one of a few modes; a wrong one is a usage error. */
function checkedFlags(options: McpProxyFlags) {
  const timeoutMs = Number(options.timeoutMs);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)
    throw new UsageError(
      `mcp-proxy --timeout-ms must be a positive integer, got ${JSON.stringify(options.timeoutMs)}`,
    );
  const integer = (flag: string, value: string) => {
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || parsed < 1_000)
      throw new UsageError(
        `mcp-proxy ${flag} must be an integer of at least 1000, got ${JSON.stringify(value)}`,
      );
    return parsed;
  };
  const maxOutputChars = integer("--max-output-chars", options.maxOutputChars);
  const maxMessageBytes = integer("--max-message-bytes", options.maxMessageBytes);
  const flaggedDescriptions = options.flaggedDescriptions;
  if (flaggedDescriptions !== "withhold" && flaggedDescriptions !== "neutral")
    throw new UsageError(
      `mcp-proxy --flagged-descriptions takes withhold or neutral, got ${JSON.stringify(flaggedDescriptions)}`,
    );
  const serverInstructions = options.serverInstructions;
  if (
    serverInstructions !== "scan" &&
    serverInstructions !== "pass" &&
    serverInstructions !== "drop"
  )
    throw new UsageError(
      `mcp-proxy --server-instructions takes scan, pass or drop, got ${JSON.stringify(serverInstructions)}`,
    );
  const sampling = options.sampling;
  if (sampling !== "refuse" && sampling !== "pass")
    throw new UsageError(
      `mcp-proxy --sampling takes refuse or pass, got ${JSON.stringify(sampling)}`,
    );
  const protectedNames = options.protect
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const sensitive = options.sensitive
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  return {
    timeoutMs,
    maxOutputChars,
    maxMessageBytes,
    flaggedDescriptions,
    serverInstructions,
    sampling,
    protectedNames,
    sensitive,
  } as const;
}

/** Runs the proxy until the host hangs up, the server exits or a signal stops it. */
async function proxy(
  command: string,
  args: string[],
  options: McpProxyFlags,
  exit: CliShared["exit"],
): Promise<void> {
  const {
    timeoutMs,
    maxOutputChars,
    maxMessageBytes,
    flaggedDescriptions,
    serverInstructions,
    sampling,
    protectedNames,
    sensitive,
  } = checkedFlags(options);
  const loaded = await loadPolicyFile(options.policy);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const redactor = (value: unknown) => redactDeep(value);
  const store = options.store ? jsonlEventStore({ dir: options.store }) : undefined;
  let runId = options.runId ?? "<runId>";
  const proxy = await runMcpProxy({
    command,
    args,
    gates: [...loaded.gates, taintGate()],
    scanner: defaultScanner(),
    envelope: quarantine(),
    toolDefaults: { timeoutMs },
    maxOutputChars,
    maxMessageBytes,
    flaggedDescriptions,
    serverInstructions,
    protectedNames,
    sampling,
    tools: Object.fromEntries(sensitive.map((name) => [name, { sensitive: true }])),
    run: {
      agentId: options.agent,
      ...(options.runId ? { runId: options.runId } : {}),
      ...(options.task ? { task: options.task } : {}),
      ...(store ? { store, approval: { durable: true } } : {}),
      // The log keeps tokens for personal data in arguments and results; the server the
      // proxy fronts gets the real values (proxied tools reveal) and so does the host.
      vault: createVault(),
      redact: redactor,
      // What the operator sees on stderr: each refusal and halt, redacted.
      onEvent: (event: StoredEvent) => {
        if (event.type === "tool-call-refusal")
          log(
            `[mcp-proxy] refused ${event.tool}: ${event.decision.reason} (${event.decision.refusedAt})`,
          );
        else if (event.type === "approval-request")
          log(
            `[mcp-proxy] ${event.tool} waits for approval ${event.requestId}: loopguard approve ${runId} --request ${event.requestId}${options.store ? ` --dir ${options.store}` : ""}`,
          );
        else if (event.type === "run-halt") log(`[mcp-proxy] run halted: ${event.reason}`);
      },
    },
    log,
  });
  runId = proxy.run.runId;
  // A host (or an operator) that stops the proxy with a signal gets the same ending as a
  // host that hangs up: the run ends stopped, its approvals withdrawn, its lock released.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const)
    process.once(signal, () => void proxy.close());
  log(
    `[mcp-proxy] run ${runId}: guarding \`${[command, ...args].join(" ")}\` with ${options.policy} (digest ${loaded.digest})`,
  );
  const closed = await proxy.closed;
  // The run has ended (stopped, its open requests withdrawn): release its lock file and
  // write its summary before the process goes.
  await store?.close();
  log(
    `[mcp-proxy] run ${runId} ended: stopped (${closed.reason === "host_closed" ? "host_disconnected" : closed.reason === "server_exited" ? "server_exited" : "proxy_closed"})`,
  );
  exit(closed.reason === "server_exited" ? 1 : 0);
}
