// The Claude Agent SDK example: loopguard's hooks in front of an agent's tools.
// With ANTHROPIC_API_KEY set and no baseUrl, it talks to Claude; the test points it at
// core's loopback Messages API server instead.
import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { loopguardHooks } from "@loopguard/claude-agent-sdk";
import { allow, argGt, deny, policy, runGuard } from "@loopguard/policy";
import { z } from "zod";

export interface AgentReport {
  refunds: string[];
  refused: string[];
  answer: string;
}

export async function guardedAgent(
  prompt: string,
  env: Record<string, string | undefined>,
): Promise<AgentReport> {
  const refunds: string[] = [];
  const shop = createSdkMcpServer({
    name: "shop",
    tools: [
      tool(
        "issue_refund",
        "Refund an order.",
        { order_id: z.string(), amount: z.number() },
        async (args) => {
          refunds.push(`${args.order_id}:${args.amount}`);
          return { content: [{ type: "text", text: `refunded ${args.amount}` }] };
        },
      ),
    ],
  });
  const guard = loopguardHooks({
    gates: [
      policy([
        deny("mcp__shop__issue_refund", {
          when: argGt("amount", 100),
          reason: "refund_over_limit",
        }),
        allow("*"),
      ]),
      runGuard(),
    ],
    run: { agentId: "claude-agent" },
  });
  let answer = "";
  for await (const message of query({
    prompt,
    options: {
      model: "claude-sonnet-5-5",
      maxTurns: 6,
      settingSources: [],
      mcpServers: { shop },
      hooks: guard.hooks,
      canUseTool: guard.canUseTool,
      env,
    },
  })) {
    if (message.type === "result" && message.subtype === "success") answer = message.result;
  }
  return {
    refunds,
    refused: guard.run.refusals.map((refusal) => `${refusal.tool}:${refusal.reason}`),
    answer,
  };
}
