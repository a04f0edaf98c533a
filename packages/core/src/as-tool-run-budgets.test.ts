import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import type { ContentBlock } from "./contracts/model.js";
import type { RunBudget } from "./contracts/run-budget.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

/** A tenant's day in memory: reservations held per run and step, settled at their real cost. */
function dayBudget(capUsd: number) {
  const held = new Map<string, number>();
  const settled = new Map<string, number>();
  const starts: string[] = [];
  const runsSeen = new Set<string>();
  const total = () => [...held.values(), ...settled.values()].reduce((sum, usd) => sum + usd, 0);
  const budget: RunBudget = {
    name: "day",
    async start(run) {
      starts.push(run.runId);
      return { ok: true };
    },
    async reserve(run, step) {
      const key = `${run.runId}#${step.step}`;
      runsSeen.add(run.runId);
      if (held.has(key) || settled.has(key)) return { ok: true };
      if (total() + step.usd > capUsd)
        return { ok: false, reason: "tenant_budget", message: "The tenant's day is spent." };
      held.set(key, step.usd);
      return { ok: true };
    },
    async settle(run, step) {
      const key = `${run.runId}#${step.step}`;
      if (settled.has(key)) return;
      held.delete(key);
      settled.set(key, step.usd);
    },
  };
  return { budget, total, starts, runsSeen };
}

/** A child that would keep looking things up forever. */
function greedyChild(store: ReturnType<typeof memoryEventStore>) {
  const replies = Array.from({ length: 40 }, (_, index) => ({
    content: [use(`toolu_c${index}`, "noop", {})],
    stop_reason: "tool_use" as const,
  }));
  return createAgent({
    model: scriptedModel(replies),
    tools: [],
    agentId: "greedy",
    store,
    maxTokens: 512,
  });
}

describe("the tree's run budgets bill a child's steps", () => {
  it("a root's day budget reserves and settles every child step, and stops the child at its cap (it counted none of them)", async () => {
    const store = memoryEventStore();
    const day = dayBudget(0.08);
    const parent = createAgent({
      model: scriptedModel([
        { content: [use("toolu_p1", "research", { task: "Dig" })], stop_reason: "tool_use" },
        { content: "Done." },
      ]),
      tools: [greedyChild(store).asTool({ name: "research", description: "Researches" })],
      agentId: "lead",
      store,
      maxTokens: 512,
      budgets: [day.budget],
    });
    const result = await parent.run("Dig.");
    const events = await store.read(result.runId);
    const end = events.find((event) => event.type === "child-run-end");
    if (end?.type !== "child-run-end") throw new Error("no child-run-end");
    // Every step of the child was reserved under the root's budget, and the day held.
    expect(day.runsSeen.has(end.childRunId)).toBe(true);
    expect(day.total()).toBeLessThanOrEqual(0.08 + 1e-12);
    const childSpend = (await store.read(end.childRunId))
      .filter((event) => event.type === "model-response")
      .reduce((sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0), 0);
    const parentSpend = events
      .filter((event) => event.type === "model-response")
      .reduce((sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0), 0);
    expect(childSpend + parentSpend).toBeLessThanOrEqual(0.08 + 1e-12);
    // The child is not a new run of the tenant: only the root was started.
    expect(day.starts).toEqual([result.runId]);
  });

  it("a budget the child shares with its parent counts each step once", async () => {
    const store = memoryEventStore();
    const day = dayBudget(10);
    const child = createAgent({
      model: scriptedModel([{ content: "Found." }]),
      tools: [],
      agentId: "child",
      store,
      budgets: [day.budget],
    });
    const parent = createAgent({
      model: scriptedModel([
        { content: [use("toolu_p1", "research", { task: "Find" })], stop_reason: "tool_use" },
        { content: "Done." },
      ]),
      tools: [child.asTool({ name: "research", description: "Researches" })],
      agentId: "lead",
      store,
      budgets: [day.budget],
    });
    const result = await parent.run("Find.");
    expect(result.status).toBe("completed");
    const spend = async (runId: string) =>
      (await store.read(runId))
        .filter((event) => event.type === "model-response")
        .reduce((sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0), 0);
    const end = (await store.read(result.runId)).find((event) => event.type === "child-run-end");
    if (end?.type !== "child-run-end") throw new Error("no child-run-end");
    expect(day.total()).toBeCloseTo(
      (await spend(result.runId)) + (await spend(end.childRunId)),
      12,
    );
  });
});
