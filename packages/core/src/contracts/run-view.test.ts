import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent, type Gate, tool } from "../index.js";
import { gateMemory, RunState } from "../plugin/index.js";
import { scriptedModel } from "../testing/index.js";

describe("gateMemory", () => {
  it("gives each run its own memory, made once by init, and keys compare by identity", () => {
    const first = new RunState({ runId: "r1", agentId: "a" });
    const second = new RunState({ runId: "r2", agentId: "a" });
    let made = 0;
    const counter = gateMemory("test.counter", (run) => {
      made += 1;
      return { runId: run.runId, calls: 0 };
    });
    // Same name, another key: never the same memory.
    const lookalike = gateMemory("test.counter", () => ({ runId: "other", calls: 100 }));
    first.memory(counter).calls += 1;
    first.memory(counter).calls += 1;
    second.memory(counter).calls += 1;
    expect(first.memory(counter)).toEqual({ runId: "r1", calls: 2 });
    expect(second.memory(counter)).toEqual({ runId: "r2", calls: 1 });
    expect(first.memory(lookalike).calls).toBe(100);
    expect(made).toBe(2);
  });

  it("is what a gate keeps between the calls of one run in the loop, and a throwing init fails closed", async () => {
    const seen = gateMemory("test.seen", () => new Set<string>());
    const once: Gate = {
      name: "once",
      step: "2",
      check: (call) => {
        const memory = call.run!.memory(seen);
        const key = JSON.stringify(call.args);
        if (memory.has(key))
          return { type: "deny", reason: "repeated", message: "Already done in this run." };
        memory.add(key);
        return { type: "allow" };
      },
    };
    const broken = gateMemory<number>("test.broken", () => {
      throw new Error("init failed");
    });
    const lookup = tool({
      name: "lookup",
      description: "Look an order up.",
      input: v.object({ id: v.string() }),
      run: async ({ id }) => ({ id, status: "shipped" }),
    });
    const use = (id: string, n: number) => ({
      content: [{ type: "tool_use" as const, id: `toolu_${n}`, name: "lookup", input: { id } }],
      stop_reason: "tool_use" as const,
    });
    const agent = createAgent({
      model: scriptedModel([
        use("A1", 1),
        use("A1", 2),
        use("A2", 3),
        { content: [{ type: "text", text: "done" }] },
      ]),
      tools: [lookup],
      gates: [once],
    });
    const result = await agent.run("look orders up");
    expect(result.blocked.map((entry) => [entry.toolUseId, entry.reason])).toEqual([
      ["toolu_2", "repeated"],
    ]);
    const failing = createAgent({
      model: scriptedModel([use("A1", 1), { content: [{ type: "text", text: "done" }] }]),
      tools: [lookup],
      gates: [
        {
          name: "broken",
          step: "2",
          check: (call) => (call.run!.memory(broken), { type: "allow" }),
        },
      ],
    });
    const failed = await failing.run("look an order up");
    expect(failed.blocked[0]?.reason).toBe("gate_error");
  });
});
