import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { dearerPrice } from "./child-loop.js";
import type { ContentBlock, Usage } from "./contracts/model.js";
import { claudePrices, costOf, type ModelPrice } from "./pricing.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

const cheap: ModelPrice = {
  inputPerMTok: 0.003,
  outputPerMTok: 0.015,
  cacheWrite5mPerMTok: 0.00375,
  cacheWrite1hPerMTok: 0.006,
  cacheReadPerMTok: 0.0003,
};

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

const rate = fc.double({ min: 0, max: 100, noNaN: true });
const rates = fc.record({
  inputPerMTok: rate,
  outputPerMTok: rate,
  cacheWrite5mPerMTok: rate,
  cacheWrite1hPerMTok: rate,
  cacheReadPerMTok: rate,
});
const price: fc.Arbitrary<ModelPrice> = fc
  .tuple(
    rates,
    fc.option(fc.tuple(rates, fc.integer({ min: 1, max: 400_000 })), { nil: undefined }),
  )
  .map(([base, band]) =>
    band ? { ...base, longPrompt: { ...band[0], thresholdTokens: band[1] } } : base,
  );
const usage: fc.Arbitrary<Usage> = fc.record({
  input_tokens: fc.integer({ min: 0, max: 500_000 }),
  output_tokens: fc.integer({ min: 0, max: 64_000 }),
  cache_read_input_tokens: fc.integer({ min: 0, max: 300_000 }),
  cache_creation_input_tokens: fc.integer({ min: 0, max: 100_000 }),
});

describe("a child billed by the tree", () => {
  it("property: the dearer price bills any usage at least what either price does", () => {
    fc.assert(
      fc.property(price, price, usage, (own, tree, used) => {
        const dearer = dearerPrice(own, tree);
        const most = Math.max(costOf(used, own), costOf(used, tree));
        expect(costOf(used, dearer)).toBeGreaterThanOrEqual(most * (1 - 1e-12));
      }),
    );
  });

  it("a child given cheaper prices for its model is billed at the tree's (it stretched the parent's cap 130x)", async () => {
    const store = memoryEventStore();
    const child = createAgent({
      model: scriptedModel([{ content: "Found it." }]),
      tools: [],
      agentId: "cheap-child",
      store,
      prices: { "claude-sonnet-5-5": cheap },
    });
    const parent = createAgent({
      model: scriptedModel([
        { content: [use("toolu_p1", "research", { task: "Find it" })], stop_reason: "tool_use" },
        { content: "Done." },
      ]),
      tools: [child.asTool({ name: "research", description: "Researches" })],
      agentId: "lead",
      store,
      budget: { maxUsd: 5 },
    });
    const result = await parent.run("Find it.");
    expect(result.status).toBe("completed");
    const end = (await store.read(result.runId)).find((event) => event.type === "child-run-end");
    expect(end).toBeDefined();
    const childEvents = await store.read(end!.type === "child-run-end" ? end!.childRunId : "");
    const response = childEvents.find((event) => event.type === "model-response");
    if (response?.type !== "model-response") throw new Error("no child response");
    const atTree = costOf(response.response.usage, claudePrices["claude-sonnet-5-5"]!);
    expect(atTree).toBeGreaterThan(costOf(response.response.usage, cheap));
    expect(response.costUsd).toBeCloseTo(atTree, 12);
  });
});
