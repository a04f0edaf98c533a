import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { Gate } from "./contracts/gate.js";
import type { ContentBlock } from "./contracts/model.js";
import { delegationKey } from "./delegation.js";
import { InvalidArgumentError } from "./errors.js";
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

  it("a child that fails, runs out of budget or is halted gives the parent a typed error; a halt halts the parent too", async () => {
    const store = memoryEventStore();
    const effects: string[] = [];
    const parentWith = (childTool: ReturnType<ReturnType<typeof createAgent>["asTool"]>) =>
      createAgent({
        model: scriptedModel([
          {
            content: [use("toolu_p1", "research", { task: "Look A1 up" })],
            stop_reason: "tool_use",
          },
          { content: "The research agent could not help." },
        ]),
        tools: [childTool],
        agentId: "lead",
        store,
      });
    // Runs out of its own budget (one step, and it needs two).
    const { agent: brief } = researcher(effects);
    const budgetResult = await parentWith(
      brief.asTool({ name: "research", description: "Researches", budget: { maxSteps: 1 } }),
    ).run("go", { runId: "run_budget" });
    expect(budgetResult.status).toBe("completed");
    const budgetLog = await store.read("run_budget");
    const refused = budgetLog.find((event) => event.type === "tool-call-result")!;
    expect(refused).toMatchObject({ isError: true, errorKind: "child_budget" });
    const body = JSON.parse((refused as { content: string }).content);
    expect(body.error).toMatchObject({
      code: "child_budget",
      childRunId: childRunId("run_budget", "toolu_p1"),
      status: "stopped",
    });
    // Fails: its model answers with an error that is not retried.
    const failing = createAgent({
      model: scriptedModel([{ error: Object.assign(new Error("bad request"), { status: 400 }) }]),
      tools: [],
      agentId: "broken",
      store,
    });
    await parentWith(failing.asTool({ name: "research", description: "Researches" })).run("go", {
      runId: "run_failed",
    });
    const failed = (await store.read("run_failed")).find(
      (event) => event.type === "tool-call-result",
    )!;
    expect(failed).toMatchObject({ isError: true, errorKind: "child_failed" });
    // Halted: a gate of the child refuses with a reason that halts.
    effects.length = 0;
    const freeze: Gate = {
      name: "kill_switch",
      step: "2",
      check: () => ({ type: "deny", reason: "kill_switch", message: "The fleet is frozen." }),
    };
    const { agent: halting } = researcher(effects);
    const frozen = createAgent({
      model: scriptedModel([
        { content: [use("toolu_c1", "lookup_order", { order_id: "A1" })], stop_reason: "tool_use" },
      ]),
      tools: [...halting.tools.values()],
      gates: [freeze],
      agentId: "frozen",
      store,
    });
    const halted = await parentWith(
      frozen.asTool({ name: "research", description: "Researches" }),
    ).run("go", { runId: "run_halted" });
    expect(halted.status).toBe("halted");
    expect(halted.haltReason).toBe("kill_switch");
    const haltedLog = await store.read("run_halted");
    expect(haltedLog.find((event) => event.type === "tool-call-result")).toMatchObject({
      errorKind: "child_halted",
    });
    expect(effects).toEqual([]);
  });

  it("the parent's gates judge the child's calls", async () => {
    const effects: string[] = [];
    const store = memoryEventStore();
    const { agent: child } = researcher(effects, store);
    const noLookups: Gate = {
      name: "parent_policy",
      step: "2",
      check: (call) =>
        call.tool === "lookup_order"
          ? { type: "deny", reason: "policy_deny", message: "Lookups are not allowed here." }
          : { type: "allow" },
    };
    const parent = createAgent({
      model: scriptedModel([
        { content: [use("toolu_p1", "research", { task: "Look A1 up" })], stop_reason: "tool_use" },
        { content: "Done." },
      ]),
      tools: [child.asTool({ name: "research", description: "Researches" })],
      gates: [noLookups],
      agentId: "lead",
      store,
    });
    await parent.run("go", { runId: "run_gated" });
    expect(effects).toEqual([]);
    const childLog = await store.read(childRunId("run_gated", "toolu_p1"));
    expect(childLog.find((event) => event.type === "tool-call-refusal")).toMatchObject({
      tool: "lookup_order",
      decision: { reason: "policy_deny", gate: "parent_policy" },
    });
  });

  it("refuses bad options with [core] errors naming the agent", () => {
    const { agent: child } = researcher([]);
    for (const share of [0, -0.5, 1.5, Number.NaN, "half"]) {
      expect(() =>
        child.asTool({ name: "research", description: "Researches", share: share as number }),
      ).toThrow(/\[core\] agent "researcher"\.asTool.*share must be a number in \(0, 1\]/);
    }
    expect(() =>
      child.asTool({ name: "research", description: "Researches", budget: { maxUsd: -1 } }),
    ).toThrow(InvalidArgumentError);
    // A child that throws at construction says which agent it is.
    expect(() =>
      createAgent({
        model: { model: "claude-sonnet-5-5" } as never,
        tools: [],
        agentId: "researcher",
        store: memoryEventStore(),
      }),
    ).toThrow(
      /^\[core\] createAgent: model must implement the Model contract.* \(agent "researcher"\)$/,
    );
    // A child on a model the parent's prices do not know.
    const custom = createAgent({
      model: scriptedModel([], { model: "house-model" }),
      tools: [],
      store: memoryEventStore(),
      agentId: "house",
      prices: {
        "house-model": {
          inputPerMTok: 1,
          outputPerMTok: 2,
          cacheWrite5mPerMTok: 1,
          cacheWrite1hPerMTok: 1,
          cacheReadPerMTok: 1,
        },
      },
    });
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [custom.asTool({ name: "house", description: "House agent" })],
        agentId: "lead",
        store: memoryEventStore(),
      }),
    ).toThrow(
      /\[core\] createAgent \(agent "lead"\).*"house-model".*add it to this agent's prices/,
    );
    // Deeper than maxDepth.
    const store = memoryEventStore();
    let agent = createAgent({ model: scriptedModel([]), tools: [], agentId: "level0", store });
    for (let level = 1; level <= 3; level += 1)
      agent = createAgent({
        model: scriptedModel([]),
        tools: [agent.asTool({ name: `level${level - 1}`, description: "Delegates" })],
        agentId: `level${level}`,
        store,
      });
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [agent.asTool({ name: "level3", description: "Delegates" })],
        agentId: "top",
        store,
      }),
    ).toThrow(/agent "top".*nest 4 deep, past maxDepth 3/);
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [agent.asTool({ name: "level3", description: "Delegates" })],
        agentId: "top",
        maxDepth: 4,
        store,
      }),
    ).not.toThrow();
    expect(() =>
      createAgent({ model: scriptedModel([]), tools: [], maxDepth: 0, store: memoryEventStore() }),
    ).toThrow(/maxDepth must be an integer from 1 to 16/);
  });

  it("refuses an agent reachable from itself", () => {
    const { agent: child } = researcher([]);
    const first = child.asTool({ name: "first", description: "First" });
    const second = child.asTool({ name: "second", description: "Second" });
    // Two delegations whose agents name each other (a tools list changed after the agent was made).
    const x = {};
    const y = {};
    const forge = (item: object, agent: object, tools: object[]) =>
      Object.freeze({
        ...item,
        [delegationKey]: {
          agentId: agent === x ? "x" : "y",
          model: "claude-sonnet-5-5",
          agent,
          tools,
          loop: {},
          run: async () => ({ type: "parked", status: "awaiting_child" }),
        },
      });
    const toolsOfX: object[] = [];
    const toolsOfY: object[] = [];
    const toX = forge(first, x, toolsOfX);
    const toY = forge(second, y, toolsOfY);
    toolsOfX.push(toY);
    toolsOfY.push(toX);
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [toX as never],
        agentId: "lead",
        store: memoryEventStore(),
      }),
    ).toThrow(/agent "x" can call itself through "x" -> "y" -> "x"/);
  });

  it("a halted parent stops its running child", async () => {
    const effects: string[] = [];
    const store = memoryEventStore();
    const lookup = tool({
      name: "lookup_order",
      description: "Looks an order up",
      input: v.object({ order_id: v.string() }),
      run: (args) => {
        effects.push(args.order_id);
        return "found";
      },
    });
    const child = createAgent({
      model: scriptedModel([
        {
          content: [use("toolu_c1", "lookup_order", { order_id: "A1" })],
          stop_reason: "tool_use",
          delayMs: 50,
        },
        { content: "Found." },
      ]),
      tools: [lookup],
      agentId: "researcher",
      store,
    });
    const freezeAll = tool({
      name: "freeze_all",
      description: "Freezes",
      input: v.object({}),
      run: () => "frozen",
    });
    const killSwitch: Gate = {
      name: "kill_switch",
      step: "2",
      check: (call) =>
        call.tool === "freeze_all"
          ? { type: "deny", reason: "kill_switch", message: "Frozen by the operator." }
          : { type: "allow" },
    };
    const parent = createAgent({
      model: scriptedModel([
        {
          content: [
            use("toolu_p1", "research", { task: "Look A1 up" }),
            use("toolu_p2", "freeze_all", {}),
          ],
          stop_reason: "tool_use",
        },
      ]),
      tools: [child.asTool({ name: "research", description: "Researches" }), freezeAll],
      gates: [killSwitch],
      agentId: "lead",
      store,
    });
    const result = await parent.run("go", { runId: "run_down" });
    expect(result.status).toBe("halted");
    expect(effects).toEqual([]);
    const childLog = await store.read(childRunId("run_down", "toolu_p1"));
    expect(childLog.find((event) => event.type === "run-halt")).toMatchObject({
      reason: "kill_switch",
      source: "parent",
    });
    expect(childLog.at(-1)).toMatchObject({ type: "run-end", status: "halted" });
  });
});
