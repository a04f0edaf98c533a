// A refund above the limit waits for a person, across requests: the run parks as
// `awaiting_approval` in the store, and a later request (another isolate, another machine)
// builds the agent again on the same store and approves it. The Worker example serves it over
// D1; the scripted model answers from what the conversation holds, so it needs no memory.
import { type Agent, createAgent, type EventStore, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { allow, argGt, ask, policy } from "@loopguard/policy";
import * as v from "valibot";

/** The desk's agent on `store`; build it anew in every request. */
export function approvalDesk(store: EventStore): Agent {
  const issueRefund = tool({
    name: "issue_refund",
    description: "Refund an order.",
    input: v.object({ order_id: v.string(), amount: v.number() }),
    sensitive: true,
    run: async ({ order_id, amount }) => ({ refunded: amount, order_id }),
  });
  const model = scriptedModel((request) =>
    request.messages.some(
      (message) =>
        Array.isArray(message.content) &&
        message.content.some((block) => block.type === "tool_result"),
    )
      ? { content: [{ type: "text", text: "Refunded 900 for A1001." }] }
      : {
          content: [
            {
              type: "tool_use",
              id: "t1",
              name: "issue_refund",
              input: { order_id: "A1001", amount: 900 },
            },
          ],
        },
  );
  return createAgent({
    model,
    tools: [issueRefund],
    store,
    approval: { durable: true },
    gates: [policy([allow("*"), ask("issue_refund", { when: argGt("amount", 500) })])],
  });
}
