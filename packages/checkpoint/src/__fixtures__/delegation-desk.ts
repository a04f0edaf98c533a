/**
 * A delegating workload for the crash tests: a front-desk agent hands the refund to a
 * refunds agent through `asTool` (the support-desk workload: look up, refund and email), then
 * opens a ticket itself, then answers. Every side effect of the tree (the child's refund and
 * email, the parent's ticket) goes to one ledger keyed by its idempotency key.
 */
import type { Agent, AgentOptions, ModelRequest, Tool } from "@loopguard/core";
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel, type ScriptedReply } from "@loopguard/core/testing";
import * as v from "valibot";
import { type Ledger, supportDeskScript, supportDeskTask, supportDeskTools } from "./support-desk.js";

/** The parent's task. */
export const deskTask = "A customer writes: order A1001 arrived broken. Sort it out and keep a ticket.";

/** The parent's final answer. */
export const deskAnswer = "Refunded A1001 through the refunds desk and opened ticket T-A1001.";

/** The parent's tool_use id of its delegation (so the child's id is `childRunId(runId, deskCallId)`). */
export const deskCallId = "toolu_delegate";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The parent's own effect: opening a ticket (recorded in the ledger once per key). */
function openTicket(ledger: Ledger, delayMs: number): Tool<any, any> {
  return tool({
    name: "open_ticket",
    description: "Open a support ticket.",
    input: v.object({ order_id: v.string(), summary: v.string() }),
    run: async ({ order_id }, context) => {
      await sleep(delayMs);
      if (!ledger.has(context.idempotencyKey))
        ledger.record({ kind: "ticket", key: context.idempotencyKey, detail: order_id });
      await sleep(delayMs);
      return { ticket: `T-${order_id}` };
    },
  });
}

/** The parent's model: delegate the refund, then open a ticket, then answer (a function of the request, so a resume gets the same replies). */
function deskScript(delayMs: number): (request: ModelRequest) => ScriptedReply {
  const delay = delayMs ? { delayMs } : {};
  return (request) => {
    const results = request.messages.flatMap((message) =>
      Array.isArray(message.content) ? message.content.filter((block) => block.type === "tool_result") : [],
    ).length;
    if (results === 0)
      return {
        ...delay,
        content: [
          { type: "text", text: "Handing the refund to the refunds desk." },
          { type: "tool_use", id: deskCallId, name: "refund_desk", input: { task: supportDeskTask } },
        ],
      };
    if (results === 1)
      return {
        ...delay,
        content: [
          { type: "tool_use", id: "toolu_ticket", name: "open_ticket", input: { order_id: "A1001", summary: "arrived broken, refunded" } },
        ],
      };
    return { ...delay, content: deskAnswer };
  };
}

/** Options of `deskTree`. */
export interface DeskTreeOptions {
  store: NonNullable<AgentOptions["store"]>;
  ledger: Ledger;
  delayMs?: number;
  /** Hears every event of both agents once it is durable. */
  onEvent?: AgentOptions["onEvent"];
  childRunner?: AgentOptions["childRunner"];
}

/** The front desk (the root agent), with the refunds agent as its `refund_desk` tool. */
export function deskTree(options: DeskTreeOptions): Agent {
  const delayMs = options.delayMs ?? 0;
  const refunds = createAgent({
    agentId: "refunds",
    model: scriptedModel(supportDeskScript({ delayMs })),
    tools: supportDeskTools(options.ledger, { delayMs }),
    store: options.store,
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  return createAgent({
    agentId: "desk",
    model: scriptedModel(deskScript(delayMs)),
    tools: [
      refunds.asTool({ name: "refund_desk", description: "Refunds desk: handles a refund end to end." }),
      openTicket(options.ledger, delayMs),
    ],
    store: options.store,
    budget: { maxUsd: 1 },
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    ...(options.childRunner ? { childRunner: options.childRunner } : {}),
  });
}
