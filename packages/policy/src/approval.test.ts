import { createAgent, type Gate, tool } from "@loopguard/core";
import { memoryEventStore, type Script, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { policy } from "./policy.js";
import { argGt } from "./predicate.js";
import { rateLimit } from "./rate-limit.js";
import { ask } from "./rule.js";
import { runGuard } from "./run-guard.js";

/** A payments service that counts the refunds it really made, by idempotency key. */
function payments() {
  const made = new Map<string, number>();
  const refund = tool({
    name: "issue_refund",
    description: "Refund money to the customer's original payment method.",
    input: v.object({ order_id: v.string(), amount: v.number() }),
    run: async ({ order_id, amount }, context) => {
      made.set(context.idempotencyKey, (made.get(context.idempotencyKey) ?? 0) + 1);
      return { order_id, refunded: amount };
    },
  });
  return { refund, made };
}

const askBigRefunds = (threshold = 500) =>
  policy([ask("issue_refund", { when: argGt("amount", threshold) })]);
const refundCall = (amount: number) => ({
  content: [
    {
      type: "tool_use" as const,
      id: "toolu_refund",
      name: "issue_refund",
      input: { order_id: "A1001", amount },
    },
  ],
});

/**
 * Agents on one store and one payments service with durable approvals, each as another process
 * would build it: `agent(replies, gates)`.
 */
function durableDesk() {
  const store = memoryEventStore();
  const { refund, made } = payments();
  const agent = (replies: Script, gates: Gate[]) =>
    createAgent({
      model: scriptedModel(replies),
      tools: [refund],
      store,
      approval: { durable: true },
      gates,
    });
  return { store, made, agent };
}

describe("durable approvals with the policy", () => {
  it("parks a big refund, and a new agent on the same store approves it: the refund runs exactly once", async () => {
    const { store, made, agent } = durableDesk();
    const first = agent([refundCall(800)], [askBigRefunds(), runGuard()]);
    const parked = await first.run("Order A1001 arrived broken, refund 800 please");
    expect(parked.status).toBe("awaiting_approval");
    expect(parked.pendingApprovals).toMatchObject([
      {
        tool: "issue_refund",
        toolUseId: "toolu_refund",
        reason: "policy_ask",
        message: 'A person must approve issue_refund when "amount" is more than 500.',
      },
    ]);
    expect(made.size).toBe(0);

    // Another agent object (as in another process), built from the same settings.
    const second = agent(
      [{ content: "Your refund of 800 is on its way." }],
      [askBigRefunds(), runGuard()],
    );
    expect(second.policyDigest).toBe(first.policyDigest);
    const done = await second.approve(parked.runId, { decision: "approve", approver: "alice" });
    expect(done.status).toBe("completed");
    expect(done.answer).toBe("Your refund of 800 is on its way.");
    expect([...made.entries()]).toEqual([[`${parked.runId}:toolu_refund`, 1]]);
    const events = await store.read(parked.runId);
    expect(events.find((event) => event.type === "approval-decision")).toMatchObject({
      decision: "approve",
      approver: "alice",
    });
    // Nothing is left to approve, and resuming a finished run does nothing again.
    await expect(
      second.approve(parked.runId, { decision: "approve", approver: "alice" }),
    ).rejects.toThrow(/no approval waiting/);
    expect((await second.resume(parked.runId)).status).toBe("completed");
    expect([...made.values()]).toEqual([1]);
  });

  it("does not charge the rate limit twice for a call re-checked after its approval", async () => {
    const { made, agent } = durableDesk();
    const limit = rateLimit(
      { tool: "issue_refund", capacity: 1, refillPerSecond: 0.0001 },
      { now: () => 0 },
    );
    const gates = [askBigRefunds(), limit];
    const first = agent([refundCall(800)], gates);
    const parked = await first.run("refund 800");
    const second = agent([{ content: "Done." }], gates);
    const done = await second.approve(parked.runId, { decision: "approve", approver: "alice" });
    expect(done.status).toBe("completed");
    expect(done.blocked).toEqual([]);
    expect(made.size).toBe(1);
  });

  it("does not ask for a small refund", async () => {
    const { refund, made } = payments();
    const agent = createAgent({
      model: scriptedModel([refundCall(80), { content: "Done." }]),
      tools: [refund],
      approval: { durable: true },
      gates: [askBigRefunds()],
    });
    expect((await agent.run("refund 80")).status).toBe("completed");
    expect(made.size).toBe(1);
  });

  it("ends a denied refund without the call", async () => {
    const { made, agent } = durableDesk();
    const first = agent([refundCall(800)], [askBigRefunds()]);
    const parked = await first.run("refund 800");
    const second = agent([{ content: "The refund was not approved." }], [askBigRefunds()]);
    const done = await second.approve(parked.runId, {
      decision: "deny",
      approver: "bob",
      note: "over the limit",
    });
    expect(done.status).toBe("completed");
    expect(made.size).toBe(0);
    expect(done.blocked).toMatchObject([
      {
        tool: "issue_refund",
        reason: "approval_denied",
        decision: { refusedAt: "3:approval", passed: expect.arrayContaining(["2:policy"]) },
      },
    ]);
  });

  it("halts the run on an indeterminate answer (policy_indeterminate)", async () => {
    const { made, agent } = durableDesk();
    const first = agent([refundCall(800)], [askBigRefunds()]);
    const parked = await first.run("refund 800");
    const second = agent([], [askBigRefunds()]);
    const done = await second.approve(parked.runId, {
      decision: "indeterminate",
      approver: "carol",
    });
    expect(done.status).toBe("halted");
    expect(done.haltReason).toBe("policy_indeterminate");
    expect(made.size).toBe(0);
  });

  it("refuses an approval given under a different policy (stale)", async () => {
    const { made, agent } = durableDesk();
    const first = agent([refundCall(800)], [askBigRefunds(500)]);
    const parked = await first.run("refund 800");
    const changed = agent([{ content: "Not refunded." }], [askBigRefunds(400)]);
    expect(changed.policyDigest).not.toBe(first.policyDigest);
    const done = await changed.approve(parked.runId, { decision: "approve", approver: "alice" });
    expect(made.size).toBe(0);
    expect(done.blocked).toMatchObject([{ reason: "approval_stale" }]);
  });
});
