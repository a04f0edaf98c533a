import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import type { ContentBlock } from "./contracts/model.js";
import { ToolError } from "./errors.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

// The breaker is per tool and process-wide: what opens it must be the dependency failing, not
// one caller's bad arguments, or one run (another tenant's, or a taken-over child) could shut
// a tool for every run.

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

function lookupTool(fail: (orderId: string) => ToolError | undefined) {
  return tool({
    name: "lookup_order",
    description: "Looks an order up",
    input: v.object({ order_id: v.string() }),
    run: ({ order_id }) => {
      const error = fail(order_id);
      if (error) throw error;
      return { order_id, status: "shipped" };
    },
  });
}

/** One run that calls `lookup_order` once per id, one call per step, then answers. */
async function callEach(tools: ReturnType<typeof lookupTool>, ids: string[]) {
  const store = memoryEventStore();
  const agent = createAgent({
    model: scriptedModel([
      ...ids.map((id, index) => ({
        content: [use(`toolu_${index}`, "lookup_order", { order_id: id })],
        stop_reason: "tool_use" as const,
      })),
      { content: "Done." },
    ]),
    tools: [tools],
    store,
    breaker: { failureThreshold: 3, cooldownMs: 60_000 },
  });
  const result = await agent.run("Look the orders up");
  return (await store.read(result.runId))
    .filter((event) => event.type === "tool-call-result" || event.type === "tool-call-refusal")
    .map((event) =>
      event.type === "tool-call-refusal" ? `refused:${event.decision.reason}` : event.status,
    );
}

describe("the circuit breaker counts outages, not answers", () => {
  it("a caller's bad ids (a ToolError that is not transient) never open it for the next run", async () => {
    const lookup = lookupTool((id) =>
      id.startsWith("A") ? undefined : new ToolError(`no such order: ${id}`),
    );
    const bad = Array.from({ length: 8 }, (_, index) => `Z${index}`);
    expect(await callEach(lookup, bad)).toEqual(bad.map(() => "error"));
    // Another run (another customer) still gets its order looked up.
    expect(await callEach(lookup, ["A1001"])).toEqual(["ok"]);
  });

  it("transient failures still open it", async () => {
    const lookup = lookupTool(() => new ToolError("upstream timed out", { transient: true }));
    expect(await callEach(lookup, ["A1", "A2", "A3", "A4"])).toEqual([
      "error",
      "error",
      "error",
      "refused:circuit_open",
    ]);
  });
});
