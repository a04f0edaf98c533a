import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { Gate } from "./contracts/gate.js";
import type { ContentBlock } from "./contracts/model.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

// A run goes on only under the agent that started it: another agent sharing the store (another
// tenant's lead, with other gates) cannot resume or answer it, nor any run of its tree, even
// when it has a delegating tool of the same name over the same child agent.

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

const askRefunds: Gate = {
  name: "refund_policy",
  step: "2",
  check: (call) =>
    call.tool === "issue_refund"
      ? { type: "ask", reason: "refund_needs_approval", message: "Refunds need a person." }
      : { type: "allow" },
};

function setup() {
  const store = memoryEventStore();
  const effects: string[] = [];
  const refund = tool({
    name: "issue_refund",
    description: "Refunds",
    input: v.object({ amount: v.number() }),
    run: (args) => {
      effects.push(`refund ${args.amount}`);
      return "refunded";
    },
  });
  const helper = () =>
    createAgent({
      agentId: "helper",
      model: scriptedModel([
        { content: [use("toolu_h1", "issue_refund", { amount: 900 })], stop_reason: "tool_use" },
        { content: "Refunded." },
      ]),
      tools: [refund],
      store,
    });
  const lead = (agentId: string, gates: Gate[]) =>
    createAgent({
      agentId,
      model: scriptedModel([
        { content: [use("toolu_p1", "helper", { task: "Refund 900" })], stop_reason: "tool_use" },
        { content: "Done." },
      ]),
      tools: [helper().asTool({ name: "helper", description: "Handles refunds" })],
      gates,
      approval: { durable: true },
      store,
    });
  const plain = (agentId: string, gates: Gate[]) =>
    createAgent({
      agentId,
      model: scriptedModel([
        { content: [use("toolu_1", "issue_refund", { amount: 900 })], stop_reason: "tool_use" },
        { content: "Done." },
      ]),
      tools: [refund],
      gates,
      approval: { durable: true },
      store,
    });
  return { store, effects, lead, plain };
}

const answer = { decision: "approve" as const, approver: "mallory" };
const refused = /started by agent "lead-acme", not by agent "lead-globex"/;

describe("a run goes on only under the agent that started it", () => {
  it("another agent cannot approve, resume or stream a parked run; its own agent can", async () => {
    const { effects, plain } = setup();
    const strict = plain("lead-acme", [askRefunds]);
    const lax = plain("lead-globex", []);
    const parked = await strict.run("Refund order A1", { runId: "run_plain" });
    expect(parked.status).toBe("awaiting_approval");
    await expect(lax.approve("run_plain", answer)).rejects.toThrow(refused);
    await expect(lax.resume("run_plain")).rejects.toThrow(refused);
    await expect(lax.resumeStream("run_plain").result).rejects.toThrow(refused);
    expect(effects).toEqual([]);
    const done = await strict.approve("run_plain", { decision: "approve", approver: "dana" });
    expect(done.status).toBe("completed");
    expect(effects).toEqual(["refund 900"]);
  });

  it("another root agent with a same-named delegating tool cannot answer or resume any run of the tree", async () => {
    const { store, effects, lead } = setup();
    const strict = lead("lead-acme", [askRefunds]);
    const lax = lead("lead-globex", []);
    const parked = await strict.run("Refund order A1", { runId: "run_tree" });
    expect(parked.status).toBe("awaiting_approval");
    const child = childRunId("run_tree", "toolu_p1");
    for (const runId of ["run_tree", child]) {
      await expect(lax.approve(runId, answer)).rejects.toThrow(refused);
      await expect(lax.resume(runId)).rejects.toThrow(refused);
    }
    expect(effects).toEqual([]);
    const statuses = Object.fromEntries((await store.list()).map((row) => [row.runId, row.status]));
    expect(statuses).toEqual({ run_tree: "awaiting_approval", [child]: "awaiting_approval" });
    // The agent that started the tree answers the child's request and the tree completes.
    const done = await strict.approve(child, { decision: "approve", approver: "dana" });
    expect(done.status).toBe("completed");
    expect(effects).toEqual(["refund 900"]);
  });
});
