import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import type { ChildRunner } from "./child-runner.js";
import type { ContentBlock } from "./contracts/model.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

// A child runner that hands the child to a queue whose job runs it to its end, and then
// reports an error (an insert that "timed out" after it landed): the child acted, so the
// parent must read what the child did, not "child_failed", and count what it spent.

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

describe("a child runner that fails after its child ended", () => {
  it("the parent records the child's real outcome and spend, and the effect happened once", async () => {
    const store = memoryEventStore();
    const refunds: string[] = [];
    const parentTurns: string[] = [];
    const build = (): ReturnType<typeof createAgent> => {
      const refund = tool({
        name: "issue_refund",
        description: "Refunds an order",
        input: v.object({ order: v.string() }),
        run: ({ order }) => {
          refunds.push(order);
          return "refunded";
        },
      });
      const desk = createAgent({
        agentId: "desk",
        store,
        tools: [refund],
        model: scriptedModel([
          {
            content: [use("toolu_c1", "issue_refund", { order: "B2002" })],
            stop_reason: "tool_use",
          },
          { content: "Refunded B2002." },
        ]),
      });
      const queue: ChildRunner = {
        name: "queue",
        async run(request, control) {
          await control.create();
          // The job runs at once in "another process" (a fresh root agent), then the insert
          // reports a timeout.
          await build().resume(request.childRunId);
          throw new Error("queue insert timed out");
        },
      };
      return createAgent({
        agentId: "front",
        store,
        childRunner: queue,
        budget: { maxUsd: 1 },
        tools: [desk.asTool({ name: "desk", description: "Refund desk" })],
        model: scriptedModel((request) => {
          const last = request.messages.at(-1);
          if (last?.role === "user" && typeof last.content !== "string") {
            const result = last.content.find((block) => block.type === "tool_result");
            parentTurns.push(JSON.stringify(result ?? null));
            return { content: "Done." };
          }
          return {
            content: [use("toolu_p1", "desk", { task: "Refund B2002" })],
            stop_reason: "tool_use",
          };
        }),
      });
    };
    const result = await build().run("Refund order B2002", { runId: "run_front" });
    expect(result.status).toBe("completed");
    expect(refunds).toEqual(["B2002"]);
    const parentLog = await store.read("run_front");
    const end = parentLog.find((event) => event.type === "child-run-end");
    expect(end).toMatchObject({ status: "completed" });
    // The model read the child's answer, not a failure.
    expect(parentTurns.join("\n")).toContain("Refunded B2002.");
    expect(parentTurns.join("\n")).not.toContain("child_failed");
    // The child's spend is in the parent's.
    const child = (await store.list()).find((row) => row.runId !== "run_front");
    expect(child?.costUsd ?? 0).toBeGreaterThan(0);
    expect(result.costUsd).toBeGreaterThanOrEqual(child!.costUsd);
  });
});
