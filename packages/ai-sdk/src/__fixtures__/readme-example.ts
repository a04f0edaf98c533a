import { guardTools, loopguardMiddleware } from "@loopguard/ai-sdk";
import { withRun } from "@loopguard/core";
import { allow, argGt, ask, policy, runGuard } from "@loopguard/policy";
import { anthropic } from "@ai-sdk/anthropic";
import { generateText, stepCountIs, tool, wrapLanguageModel } from "ai";
import { z } from "zod";

const tools = {
  lookup_order: tool({
    description: "Look up an order by id.",
    inputSchema: z.object({ order_id: z.string() }),
    execute: async ({ order_id }) => ({ order_id, status: "delivered", total: 89.99 }),
  }),
  issue_refund: tool({
    description: "Refund money to the customer's original payment method.",
    inputSchema: z.object({ order_id: z.string(), amount: z.number() }),
    execute: async ({ order_id, amount }, { toolCallId }) => {
      // toolCallId is loopguard's tool-use id: pass `${runId}:${toolCallId}` as your idempotency key.
      return { refunded: amount, order_id, reference: toolCallId };
    },
  }),
};

const question = "Order A1001 arrived broken, refund please";

const answer = await withRun({ agentId: "support" }, async (run) => {
  const result = await generateText({
    model: wrapLanguageModel({
      model: anthropic("claude-sonnet-5-5"),
      middleware: loopguardMiddleware({ budget: { maxSteps: 8, maxUsd: 0.5 } }),
    }),
    tools: guardTools(tools, {
      gates: [
        policy([ask("issue_refund", { when: argGt("amount", 500) }), allow("*")]),
        runGuard({ irreversibleTools: ["issue_refund"] }),
      ],
      approval: "ai-sdk", // asks become the AI SDK's tool-approval-request parts
    }),
    prompt: question,
    stopWhen: stepCountIs(8),
  });
  return { text: result.text, halted: run.halted, spentUsd: run.spend.usd };
});
console.log(answer.text);
