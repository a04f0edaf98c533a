import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { type Agent, createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { ModelRequest } from "./contracts/model.js";
import { requestBytes } from "./pricing.js";
import { memoryEventStore, type ScriptedReply, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const fetchPage = tool({
  name: "fetch_page",
  description: "Fetch a page (a paid API: each call costs).",
  input: v.object({ page: v.number() }),
  trust: "trusted",
  costUsd: 0.0004,
  run: async ({ page }) => `page ${page}: ${"line; ".repeat(30)}`,
});

/** A model that never stops calling tools and bills every call at its worst case's output. */
function runaway(name: string, outputShare: number) {
  return scriptedModel(
    (request: ModelRequest, call: number): ScriptedReply => ({
      content: [
        {
          type: "tool_use",
          id: `toolu_${name}_${call}`,
          name: "fetch_page",
          input: { page: call },
        },
      ],
      usage: {
        input_tokens: Math.floor(requestBytes(request) / 4),
        output_tokens: Math.max(1, Math.floor(outputShare * request.max_tokens)),
      },
    }),
  );
}

/** A delegating model: each of its first `rounds` turns calls every delegate tool at once, then it answers. */
function delegator(name: string, tools: readonly string[], rounds: number) {
  return scriptedModel((request: ModelRequest, call: number): ScriptedReply => {
    const usage = { input_tokens: Math.floor(requestBytes(request) / 4), output_tokens: 50 };
    if (call > rounds || tools.length === 0) return { content: `${name} is done.`, usage };
    return {
      content: tools.map((item, index) => ({
        type: "tool_use" as const,
        id: `toolu_${name}_${call}_${index}`,
        name: item,
        input: { task: `part ${index} of round ${call}` },
      })),
      usage,
    };
  });
}

interface Shape {
  maxUsd: number;
  children: Array<{ share: number; output: number; grandchildren: number[] }>;
  rounds: number;
}

/** A three-level tree under one budget, every run in `store`. */
function buildTree(store: EventStore, shape: Shape): Agent {
  const tools = shape.children.map((child, index) => {
    const grandTools = child.grandchildren.map((output, g) =>
      createAgent({
        model: runaway(`g${index}_${g}`, output),
        tools: [fetchPage],
        agentId: `grandchild-${index}-${g}`,
        store,
      }).asTool({ name: `grand_${g}`, description: "Digs deeper", share: 0.5 }),
    );
    const agent =
      grandTools.length > 0
        ? createAgent({
            model: delegator(
              `c${index}`,
              grandTools.map((item) => item.name),
              2,
            ),
            tools: grandTools,
            agentId: `child-${index}`,
            store,
          })
        : createAgent({
            model: runaway(`c${index}`, child.output),
            tools: [fetchPage],
            agentId: `child-${index}`,
            store,
          });
    return agent.asTool({ name: `child_${index}`, description: "Works", share: child.share });
  });
  return createAgent({
    model: delegator(
      "root",
      tools.map((item) => item.name),
      shape.rounds,
    ),
    tools,
    agentId: "root",
    store,
    budget: { maxUsd: shape.maxUsd },
  });
}

/** Every run's billed spend in a store (responses, billed retries and errors, priced tool calls). */
async function storeSpend(store: EventStore): Promise<number> {
  let usd = 0;
  for (const row of await store.list({ limit: 1000 }))
    for (const event of await store.read(row.runId))
      if (event.type === "tool-call-intent") usd += event.costUsd ?? 0;
      else if (
        (event.type === "model-response" ||
          event.type === "model-retry" ||
          event.type === "model-error") &&
        typeof event.costUsd === "number"
      )
        usd += event.costUsd;
  return usd;
}

/** A memory store that records the order of every append across runs (to cut it anywhere). */
function recordingStore(): {
  store: EventStore;
  order: Array<{ runId: string; event: StoredEvent }>;
} {
  const inner = memoryEventStore();
  const order: Array<{ runId: string; event: StoredEvent }> = [];
  return {
    order,
    store: {
      name: inner.name,
      read: (runId) => inner.read(runId),
      list: (filter) => inner.list(filter),
      async append(runId, events, options) {
        const result = await inner.append(runId, events, options);
        for (const [index, event] of events.entries())
          order.push({
            runId,
            event: { ...event, seq: options.expectedSeq + index } as StoredEvent,
          });
        return result;
      },
    },
  };
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  maxUsd: fc.double({ min: 0.002, max: 0.2, noNaN: true }),
  children: fc.array(
    fc.record({
      share: fc.double({ min: 0.05, max: 1, noNaN: true }),
      output: fc.double({ min: 0.1, max: 1, noNaN: true }),
      grandchildren: fc.array(fc.double({ min: 0.1, max: 1, noNaN: true }), { maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  rounds: fc.integer({ min: 1, max: 3 }),
});

describe("one budget for a tree of runs", () => {
  it("property: parallel children and grandchildren never take the tree past the root's maxUsd, and their spend is the root's", async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, async (shape) => {
        const store = memoryEventStore();
        const result = await buildTree(store, shape).run("Do the work.", { runId: "run_root" });
        const total = await storeSpend(store);
        expect(total).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
        expect(result.costUsd).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
        // Every child's spend reached the root's log (child-run-end), none twice.
        if (result.status === "completed" || result.status === "stopped")
          expect(result.costUsd).toBeCloseTo(total, 9);
        // Each child's caps were its share of what was left, never more than the root's.
        for (const event of await store.read("run_root"))
          if (event.type === "child-run-start")
            expect(event.budget.maxUsd!).toBeLessThanOrEqual(shape.maxUsd + 1e-12);
      }),
      { numRuns: 40 },
    );
  });

  it("property: cut the tree's log anywhere (a crash), resume from the root: still never past the cap", async () => {
    await fc.assert(
      fc.asyncProperty(
        shapeArb,
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (shape, where) => {
          const { store, order } = recordingStore();
          await buildTree(store, shape).run("Do the work.", { runId: "run_root" });
          const cut = Math.max(1, Math.floor(where * order.length));
          const partial = memoryEventStore();
          const prefix = order.slice(0, cut);
          for (const runId of new Set(prefix.map((entry) => entry.runId)))
            await partial.append(
              runId,
              prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
              { expectedSeq: 0 },
            );
          const resumed = await buildTree(partial, shape).resume("run_root");
          expect(resumed.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
          const total = await storeSpend(partial);
          expect(total).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
          expect(resumed.costUsd).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a child's caps are its share of what the parent has left when the call starts", async () => {
    const store = memoryEventStore();
    const child = createAgent({
      model: runaway("c", 1),
      tools: [fetchPage],
      agentId: "child",
      store,
      budget: { maxUsd: 0.04, maxSteps: 50 },
    });
    const root = createAgent({
      model: delegator("root", ["child"], 1),
      tools: [child.asTool({ name: "child", description: "Works", share: 0.25 })],
      agentId: "root",
      store,
      budget: { maxUsd: 0.1 },
    });
    const result = await root.run("go", { runId: "run_share" });
    const log = await store.read("run_share");
    const firstCost = (log.find((event) => event.type === "model-response") as { costUsd: number })
      .costUsd;
    const start = log.find((event) => event.type === "child-run-start") as {
      budget: { maxUsd: number; maxSteps: number };
    };
    expect(start.budget.maxUsd).toBeCloseTo(Math.min(0.04, 0.25 * (0.1 - firstCost)), 12);
    expect(start.budget.maxSteps).toBe(50);
    const end = log.find((event) => event.type === "child-run-end") as {
      costUsd: number;
      status: string;
    };
    expect(end.costUsd).toBeLessThanOrEqual(start.budget.maxUsd + 1e-12);
    expect(end.status).toBe("stopped");
    expect(result.costUsd).toBeLessThanOrEqual(0.1);
  });

  it("a priced tool in one child is refused when its running siblings left the tree too little", async () => {
    const store = memoryEventStore();
    const paid: string[] = [];
    const report = tool({
      name: "buy_report",
      description: "Buys a credit report.",
      input: v.object({}),
      costUsd: 0.03,
      run: (_args, context) => {
        paid.push(context.runId);
        return "report";
      },
    });
    const buyer = (name: string) =>
      createAgent({
        model: scriptedModel([
          {
            content: [{ type: "tool_use", id: `toolu_${name}`, name: "buy_report", input: {} }],
            usage: { input_tokens: 10, output_tokens: 5 },
          },
          { content: "Bought.", usage: { input_tokens: 10, output_tokens: 5 } },
        ]),
        tools: [report],
        agentId: name,
        store,
        maxTokens: 64,
      }).asTool({ name, description: "Buys a report." });
    const root = createAgent({
      model: delegator("root", ["first", "second"], 1),
      tools: [buyer("first"), buyer("second")],
      agentId: "root",
      store,
      maxTokens: 64,
      budget: { maxUsd: 0.05 },
    });
    const result = await root.run("Buy two reports.", { runId: "run_buy" });
    // Each child's own cap allows one report ($0.03 of about $0.05); the tree allows one.
    expect(paid).toHaveLength(1);
    const refusal = (
      await Promise.all(
        ["first", "second"].map(async (_, index) =>
          store.read(childRunId("run_buy", `toolu_root_1_${index}`)),
        ),
      )
    )
      .flat()
      .find((event) => event.type === "tool-call-refusal");
    expect(refusal).toMatchObject({
      tool: "buy_report",
      decision: { reason: "budget_exceeded", message: expect.stringContaining("tree of agents") },
    });
    expect(result.costUsd).toBeLessThanOrEqual(0.05);
    expect(await storeSpend(store)).toBeLessThanOrEqual(0.05);
  });
});
