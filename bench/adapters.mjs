// Cost of one guarded call through each adapter, beside guardTool alone (the goal: within
// 2x), and what the MCP proxy adds per tools/call over loopback stdio (goal: under 1 ms p50).
// Imported by gates.mjs, which prints the figures in its JSON line under `adapters`.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** Times `once(index)` `calls` times; p50/p99 in microseconds after a 10% warm-up. */
async function time(calls, once, stats) {
  const samples = [];
  for (let index = 0; index < calls; index += 1) {
    const started = performance.now();
    await once(index);
    samples.push((performance.now() - started) * 1000);
  }
  return stats(samples.slice(Math.floor(calls / 10)));
}

const argsOf = (index) => ({ order_id: `A${index}`, amount: 10 + (index % 50), reason: "damaged" });
const schema = {
  type: "object",
  properties: {
    order_id: { type: "string" },
    amount: { type: "number" },
    reason: { type: "string" },
  },
  required: ["order_id", "amount", "reason"],
  additionalProperties: false,
};

/**
 * Measures each adapter with the given gates. `refund` is the loopguard tool of gates.mjs
 * (the same sensitive refund every row uses).
 */
export async function measureAdapters({ calls, gates, refund, stats }) {
  const core = await import("@loopguard/core");
  const out = { missing: [] };

  // guardTool alone, with a tool-use id as the adapters pass one.
  const guarded = core.guardTool(refund, { gates: gates() });
  out.guardTool = await core.withRun({ agentId: "bench" }, () =>
    time(calls, (index) => guarded(argsOf(index), { toolUseId: `g${index}` }), stats),
  );

  // The AI SDK: guardTools(...).issue_refund.execute, as generateText calls it.
  try {
    const { guardTools } = await import("@loopguard/ai-sdk");
    const ai = await import("ai");
    const tools = guardTools(
      {
        issue_refund: ai.tool({
          description: "Refund an order.",
          inputSchema: ai.jsonSchema(schema),
          execute: async () => "ok",
        }),
      },
      { gates: gates(), tools: { issue_refund: { sensitive: true } } },
    );
    out.aiSdk = await core.withRun({ agentId: "bench" }, () =>
      time(
        calls,
        (index) =>
          tools.issue_refund.execute(argsOf(index), { toolCallId: `a${index}`, messages: [] }),
        stats,
      ),
    );
  } catch (error) {
    out.missing.push(`ai-sdk (${error.message})`);
  }

  // The Claude Agent SDK: the PreToolUse and PostToolUse hooks of one call (the SDK runs the tool).
  try {
    const { loopguardHooks } = await import("@loopguard/claude-agent-sdk");
    const hooks = await core.withRun({ agentId: "bench" }, async () =>
      loopguardHooks({ gates: gates(), sensitiveTools: ["issue_refund"] }),
    );
    const pre = hooks.hooks.PreToolUse[0].hooks[0];
    const post = hooks.hooks.PostToolUse[0].hooks[0];
    const signal = new AbortController().signal;
    const base = { session_id: "s", transcript_path: "", cwd: "" };
    out.claudeHooks = await time(
      calls,
      async (index) => {
        const input = argsOf(index);
        await pre(
          {
            ...base,
            hook_event_name: "PreToolUse",
            tool_name: "issue_refund",
            tool_input: input,
            tool_use_id: `c${index}`,
          },
          `c${index}`,
          { signal },
        );
        await post(
          {
            ...base,
            hook_event_name: "PostToolUse",
            tool_name: "issue_refund",
            tool_input: input,
            tool_response: "ok",
            tool_use_id: `c${index}`,
          },
          `c${index}`,
          { signal },
        );
      },
      stats,
    );
  } catch (error) {
    out.missing.push(`claude-agent-sdk (${error.message})`);
  }

  // MCP: guardMcpTools over an in-process server, beside the bare client call.
  try {
    const { guardMcpTools } = await import("@loopguard/mcp");
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
    const { InMemoryTransport } = await import("@modelcontextprotocol/sdk/inMemory.js");
    const types = await import("@modelcontextprotocol/sdk/types.js");
    const server = new Server({ name: "echo", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(types.ListToolsRequestSchema, async () => ({
      tools: [{ name: "issue_refund", description: "Refund an order.", inputSchema: schema }],
    }));
    server.setRequestHandler(types.CallToolRequestSchema, async () => ({
      content: [{ type: "text", text: "ok" }],
    }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "bench", version: "1.0.0" });
    await client.connect(clientSide);
    out.mcpDirect = await time(
      calls,
      (index) => client.callTool({ name: "issue_refund", arguments: argsOf(index) }),
      stats,
    );
    const [tool] = await guardMcpTools(client, {
      gates: gates(),
      tools: { issue_refund: { sensitive: true } },
    });
    out.mcpGuarded = await core.withRun({ agentId: "bench" }, () =>
      time(calls, (index) => tool(argsOf(index), { toolUseId: `m${index}` }), stats),
    );
    await client.close();
  } catch (error) {
    out.missing.push(`mcp guardMcpTools (${error.message})`);
  }

  // The MCP proxy (the CLI, a process of its own) against the same server direct, over stdio.
  const cli = join(here, "..", "apps", "demo", "dist", "cli.js");
  if (!existsSync(cli))
    out.missing.push("mcp proxy (build the CLI: pnpm --filter loopguard build)");
  else {
    const dir = mkdtempSync(join(tmpdir(), "loopguard-bench-mcp-"));
    try {
      const policy = join(dir, "policy.json");
      writeFileSync(
        policy,
        JSON.stringify({ version: 1, default: "allow", rules: [], runGuard: {} }),
      );
      const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
      const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
      const server = join(here, "fixtures", "echo-mcp-server.mjs");
      const stdioCalls = Math.min(calls, 3_000);
      const over = async (command, args) => {
        const client = new Client({ name: "bench", version: "1.0.0" });
        await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
        try {
          // Different arguments each call, so the RunGuard never sees a loop.
          return await time(
            stdioCalls,
            (index) => client.callTool({ name: "issue_refund", arguments: argsOf(index) }),
            stats,
          );
        } finally {
          await client.close();
        }
      };
      out.stdioDirect = await over(process.execPath, [server]);
      out.stdioProxy = await over(process.execPath, [
        cli,
        "mcp-proxy",
        "--policy",
        policy,
        "--",
        process.execPath,
        server,
      ]);
      out.stdioCalls = stdioCalls;
    } catch (error) {
      out.missing.push(`mcp proxy (${error.message})`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}
