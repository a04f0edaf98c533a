import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent, type Gate, tool } from "./index.js";
import { gateMemory } from "./plugin/index.js";
import { describeGate, memoryEventStore, scriptedModel } from "./testing/index.js";

// The README's "Writing a gate" example, verbatim but for the import paths: it must pass the
// Gate conformance suite and do in a real loop what the README says it does.

// At most three refunds per run, counted from the run's admitted calls.
const refunds = gateMemory("refund_cap.count", (run) => ({
  seen: run.calls.length,
  count: run.calls.filter((call) => call.tool === "issue_refund").length,
}));

const refundCap: Gate = {
  name: "refund_cap",
  step: "2",
  check(call) {
    if (call.tool !== "issue_refund") return { type: "allow" };
    if (!call.run)
      return { type: "deny", reason: "refund_cap_outside_run", message: "Refunds need a run." };
    const memory = call.run.memory(refunds);
    for (const admitted of call.run.calls.slice(memory.seen))
      if (admitted.tool === "issue_refund") memory.count += 1;
    memory.seen = call.run.calls.length;
    return memory.count < 3
      ? { type: "allow" }
      : {
          type: "deny",
          reason: "refund_cap",
          message: "This run already issued three refunds.",
          fixHints: ["Tell the user a person will review further refunds."],
          halt: true,
        };
  },
};

await describeGate({
  name: "the README's refund cap",
  create: () => refundCap,
  allows: [
    { tool: "issue_refund", args: { order_id: "A1", amount: 5 } },
    { tool: "lookup_order", args: { order_id: "A1" } },
  ],
});

const refundCall = (n: number) => ({
  content: [
    {
      type: "tool_use" as const,
      id: `toolu_${n}`,
      name: "issue_refund",
      input: { order_id: `A${n}`, amount: n },
    },
  ],
});

describe("the README's refund cap in a loop", () => {
  it("admits three refunds, refuses the fourth and halts the run through the decision", async () => {
    const issued: number[] = [];
    const store = memoryEventStore();
    const result = await createAgent({
      model: scriptedModel([
        refundCall(1),
        refundCall(2),
        refundCall(3),
        refundCall(4),
        refundCall(5),
        { content: "done" },
      ]),
      tools: [
        tool({
          name: "issue_refund",
          description: "Refund an order.",
          input: v.object({ order_id: v.string(), amount: v.number() }),
          run: async ({ amount }) => {
            issued.push(amount);
            return "refunded";
          },
        }),
      ],
      gates: [refundCap],
      store,
    }).run("refund everything");
    expect(issued).toEqual([1, 2, 3]);
    const refusals = (await store.read(result.runId)).flatMap((event) =>
      event.type === "tool-call-refusal" ? [event] : [],
    );
    expect(refusals[0]).toMatchObject({
      toolUseId: "toolu_4",
      decision: { reason: "refund_cap", refusedAt: "2:refund_cap", halted: true },
    });
    // Every later call is refused by core's latch, not by the gate.
    for (const later of refusals.slice(1)) expect(later.decision.reason).toBe("run_halted");
  });
});
