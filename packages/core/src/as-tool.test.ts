import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { ContentBlock } from "./contracts/model.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

/** A child that looks an order up and answers; the effects it had, in order. */
function researcher(effects: string[], store = memoryEventStore()) {
  const lookup = tool({
    name: "lookup_order",
    description: "Looks an order up",
    input: v.object({ order_id: v.string() }),
    trust: "trusted",
    run: (args, context) => {
      effects.push(`lookup ${args.order_id} ${context.idempotencyKey}`);
      return { order_id: args.order_id, status: "shipped" };
    },
  });
  const model = scriptedModel([
    { content: [use("toolu_c1", "lookup_order", { order_id: "A1" })], stop_reason: "tool_use" },
    { content: "Order A1 has shipped." },
  ]);
  const agent = createAgent({ model, tools: [lookup], agentId: "researcher", store });
  return { agent, model };
}

describe("agent.asTool", () => {
  it("runs the child as a linked run whose answer is the tool's result", async () => {
    const effects: string[] = [];
    const store = memoryEventStore();
    const { agent: child } = researcher(effects);
    const parentModel = scriptedModel([
      {
        content: [use("toolu_p1", "research", { task: "Where is order A1?" })],
        stop_reason: "tool_use",
      },
      { content: "A1 has shipped." },
    ]);
    const parent = createAgent({
      model: parentModel,
      tools: [child.asTool({ name: "research", description: "Researches orders" })],
      agentId: "lead",
      store,
      budget: { maxUsd: 1 },
    });
    const result = await parent.run("Tell me about A1", { runId: "run_parent" });
    expect(result.status).toBe("completed");
    const id = childRunId("run_parent", "toolu_p1");
    expect(effects).toEqual([`lookup A1 ${id}:toolu_c1`]);
    const parentLog = await store.read("run_parent");
    const types = parentLog.map((event) => event.type);
    expect(types).toContain("child-run-start");
    const start = types.indexOf("child-run-start");
    const end = types.indexOf("child-run-end");
    const toolResult = types.indexOf("tool-call-result");
    expect(start).toBeLessThan(end);
    expect(end).toBeLessThan(toolResult);
    const childLog = await store.read(id);
    expect(childLog[0]).toMatchObject({
      type: "run-start",
      agentId: "researcher",
      task: "Where is order A1?",
      parent: {
        runId: "run_parent",
        callId: "toolu_p1",
        tool: "research",
        depth: 1,
        rootRunId: "run_parent",
      },
    });
    const resultEvent = parentLog[toolResult]!;
    expect(resultEvent).toMatchObject({ content: "Order A1 has shipped.", trust: "trusted" });
    // The parent's second request carries the child's answer as the tool result.
    const sent = JSON.stringify(parentModel.requests[1]!.messages.at(-1));
    expect(sent).toContain("Order A1 has shipped.");
    const endEvent = parentLog[end]! as { costUsd: number };
    expect(endEvent.costUsd).toBeGreaterThan(0);
    // The parent's spend includes the child's.
    const own = parentLog
      .filter((event) => event.type === "model-response")
      .reduce((sum, event) => sum + (event as { costUsd: number }).costUsd, 0);
    expect(result.costUsd).toBeCloseTo(own + endEvent.costUsd, 12);
    const summaries = await store.list();
    expect(summaries.find((row) => row.runId === id)).toMatchObject({
      parentRunId: "run_parent",
      rootRunId: "run_parent",
      depth: 1,
    });
  });
});
