// The AI SDK example: a support desk whose tools go through loopguard with one call.
// Run it: the test in ../test/examples.test.ts drives it with the AI SDK's mock model; pass
// anthropic("claude-sonnet-5-5") from @ai-sdk/anthropic to run it against Claude.
import type { LanguageModelV3 } from "@ai-sdk/provider";
import { guardTools, loopguardMiddleware } from "@loopguard/ai-sdk";
import { withRun } from "@loopguard/core";
import { allow, argGt, deny, policy, runGuard } from "@loopguard/policy";
import { generateText, stepCountIs, tool, wrapLanguageModel } from "ai";
import { z } from "zod";

/** What the desk did: the model's answer, the refunds it made, and what loopguard refused. */
export interface DeskReport {
  answer: string;
  refunds: string[];
  refused: string[];
  steps: number;
}

export async function refundDesk(model: LanguageModelV3, question: string): Promise<DeskReport> {
  const refunds: string[] = [];
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
        refunds.push(`${order_id}:${amount}:${toolCallId}`);
        return { refunded: amount };
      },
    }),
  };
  return withRun({ agentId: "refund-desk" }, async (run) => {
    const result = await generateText({
      model: wrapLanguageModel({
        model,
        middleware: loopguardMiddleware({ budget: { maxSteps: 6 } }),
      }),
      tools: guardTools(tools, {
        gates: [
          policy([
            deny("issue_refund", { when: argGt("amount", 100), reason: "refund_over_limit" }),
            allow("*"),
          ]),
          runGuard(),
        ],
      }),
      prompt: question,
      stopWhen: stepCountIs(6),
    });
    return {
      answer: result.text,
      refunds,
      refused: run.refusals.map((refusal) => `${refusal.tool}:${refusal.reason}`),
      steps: run.spend.steps,
    };
  });
}
