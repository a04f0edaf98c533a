import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent, tool } from "./index.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.pipe(v.string(), v.description("The order id")) }),
  run: async ({ order_id }) => ({ order_id, status: "delivered", total: 89.99 }),
});

describe("smoke", () => {
  it("runs a tool and answers", async () => {
    const model = scriptedModel([
      {
        content: [
          { type: "text", text: "Looking." },
          { type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1001" } },
        ],
      },
      { content: "It was delivered." },
    ]);
    const store = memoryEventStore();
    const agent = createAgent({ model, tools: [lookup], store });
    const result = await agent.run("Where is A1001?");
    expect(result.status).toBe("completed");
    expect(result.answer).toBe("It was delivered.");
    expect(result.steps).toBe(2);
    expect(model.requests[1]!.messages).toHaveLength(3);
    expect(model.requests[1]!.messages[2]).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: '{"order_id":"A1001","status":"delivered","total":89.99}',
        },
      ],
    });
    const events = await store.read(result.runId);
    expect(events.map((event) => event.type)).toEqual([
      "run-start",
      "model-request",
      "model-response",
      "tool-call-intent",
      "tool-call-result",
      "model-request",
      "model-response",
      "run-end",
    ]);
  });
});
