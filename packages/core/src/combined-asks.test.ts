import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { ApprovalRequest } from "./contracts/approver.js";
import type { Gate } from "./contracts/gate.js";
import { createAgent, tool } from "./index.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

// Two asks about one call (a policy ask over an amount and a taint ask over where a value came
// from) are one question with two reasons: the approver sees both, and an approval covers
// exactly the asks it saw.

const refundTool = (refunds: number[]) =>
  tool({
    name: "issue_refund",
    description: "Refund an order.",
    input: v.object({ order_id: v.string(), amount: v.number() }),
    run: async ({ amount }) => {
      refunds.push(amount);
      return "refunded";
    },
  });

const askingGate = (
  name: string,
  step: Gate["step"],
  reason: string,
  when: () => boolean,
): Gate => ({
  name,
  step,
  check: (call) =>
    call.tool === "issue_refund" && when()
      ? {
          type: "ask",
          reason,
          message: `${reason}: ${name} wants a person to look at ${String(call.args.order_id)}`,
        }
      : { type: "allow" },
});

const refundCall = (amount: number) => ({
  content: [
    {
      type: "tool_use" as const,
      id: "toolu_r",
      name: "issue_refund",
      input: { order_id: "A9", amount },
    },
  ],
});

describe("every ask reaches the approver", () => {
  it("asks once with every reason of every gate that asked, in step order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(["policy", "rate", "taint"], { minLength: 1 }),
        fc.constantFrom("approve", "deny"),
        async (asking, answer) => {
          const refunds: number[] = [];
          const requests: ApprovalRequest[] = [];
          const gates = [
            askingGate("policy", "2", "policy_ask", () => asking.includes("policy")),
            askingGate("rate", "2.1", "rate_ask", () => asking.includes("rate")),
            askingGate("taint", "2.5", "taint_ask", () => asking.includes("taint")),
          ];
          const store = memoryEventStore();
          const result = await createAgent({
            model: scriptedModel([refundCall(900), { content: "ok" }]),
            tools: [refundTool(refunds)],
            gates,
            store,
            approver: async (request) => {
              requests.push(request);
              return answer as "approve" | "deny";
            },
          }).run("refund");
          expect(requests).toHaveLength(1);
          const expected = asking.map(
            (name) => `${name === "policy" ? "policy" : name === "rate" ? "rate" : "taint"}_ask`,
          );
          expect(requests[0]!.reasons.map((item) => item.reason)).toEqual(expected);
          expect(requests[0]!.reason).toBe(expected[0]);
          for (const name of asking)
            expect(requests[0]!.message).toContain(`${name} wants a person`);
          const logged = (await store.read(result.runId)).filter(
            (event) => event.type === "approval-request",
          );
          expect(logged).toHaveLength(1);
          expect(
            logged[0]!.type === "approval-request" &&
              logged[0]!.reasons?.map((item) => item.reason),
          ).toEqual(expected);
          expect(refunds).toEqual(answer === "approve" ? [900] : []);
        },
      ),
      { numRuns: 20 },
    );
  });

  it("an approval covers exactly the asks it saw: a reason added since makes it stale", async () => {
    const refunds: number[] = [];
    let tainted = false;
    const gates = [
      askingGate("policy", "2", "policy_ask", () => true),
      askingGate("taint", "2.5", "taint_ask", () => tainted),
    ];
    const store = memoryEventStore();
    const agent = createAgent({
      model: scriptedModel([refundCall(900), { content: "ok" }, { content: "ok" }]),
      tools: [refundTool(refunds)],
      gates,
      store,
      approval: { durable: true },
    });
    const parked = await agent.run("refund");
    expect(parked.status).toBe("awaiting_approval");
    expect(parked.pendingApprovals?.[0]?.reason).toBe("policy_ask");
    // A person approves what they saw (the amount); meanwhile the call became tainted.
    tainted = true;
    const after = await agent.approve(parked.runId, { decision: "approve", approver: "dana" });
    expect(refunds).toEqual([]);
    expect(after.blocked.map((call) => call.reason)).toEqual(["approval_stale"]);
  });
});
