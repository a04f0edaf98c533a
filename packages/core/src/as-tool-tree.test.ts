import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import type { AgentStreamEvent } from "./agent-stream.js";
import { childRunId } from "./child-run-id.js";
import type { Gate } from "./contracts/gate.js";
import type { ContentBlock } from "./contracts/model.js";
import { traceIdOf } from "./spans.js";
import { memoryEventStore, recordingExporter, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

/** parent -> researcher -> digger: a three-level tree; every agent's log in `store`. */
function threeLevels(options: { gates?: Gate[]; approval?: { durable: boolean } } = {}) {
  const store = memoryEventStore();
  const exporter = recordingExporter();
  const effects: string[] = [];
  const refund = tool({
    name: "issue_refund",
    description: "Refunds",
    input: v.object({ amount: v.number() }),
    run: (args, context) => {
      effects.push(`refund ${args.amount} ${context.idempotencyKey}`);
      return "refunded";
    },
  });
  const digger = createAgent({
    model: scriptedModel([
      { content: [use("toolu_d1", "issue_refund", { amount: 7 })], stop_reason: "tool_use" },
      { content: "Refunded 7." },
    ]),
    tools: [refund],
    agentId: "digger",
    store,
  });
  const researcher = createAgent({
    model: scriptedModel([
      { content: [use("toolu_r1", "dig", { task: "Refund 7" })], stop_reason: "tool_use" },
      { content: "The digger refunded 7." },
    ]),
    tools: [digger.asTool({ name: "dig", description: "Digs" })],
    agentId: "researcher",
    store,
  });
  const parent = createAgent({
    model: scriptedModel([
      {
        content: [use("toolu_p1", "research", { task: "Handle the refund" })],
        stop_reason: "tool_use",
      },
      { content: "All done: refunded 7." },
    ]),
    tools: [researcher.asTool({ name: "research", description: "Researches" })],
    agentId: "lead",
    store,
    exporters: [exporter],
    ...(options.gates ? { gates: options.gates } : {}),
    ...(options.approval ? { approval: options.approval } : {}),
  });
  const childId = childRunId("run_p", "toolu_p1");
  const grandId = childRunId(childId, "toolu_r1");
  return { store, exporter, effects, parent, childId, grandId };
}

describe("a tree of runs: one trace, one stream, one approval", () => {
  it("child spans are in the root's trace, each run span under its parent's execute_tool span", async () => {
    const { exporter, parent, childId, grandId } = threeLevels();
    const result = await parent.run("Handle it", { runId: "run_p" });
    expect(result.status).toBe("completed");
    await parent.shutdown();
    const spans = exporter.spans;
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([traceIdOf("run_p")]));
    const runSpan = (runId: string) =>
      spans.find((span) => span.kind === "run" && span.attributes["loopguard.run_id"] === runId)!;
    const toolSpan = (runId: string, name: string) =>
      spans.find(
        (span) =>
          span.kind === "tool" &&
          span.attributes["loopguard.run_id"] === runId &&
          span.name === `execute_tool ${name}`,
      )!;
    expect(runSpan("run_p").parentSpanId).toBeUndefined();
    expect(runSpan(childId).parentSpanId).toBe(toolSpan("run_p", "research").spanId);
    expect(runSpan(grandId).parentSpanId).toBe(toolSpan(childId, "dig").spanId);
    expect(runSpan(childId).name).toBe("invoke_agent researcher");
    expect(runSpan(grandId).attributes).toMatchObject({
      "loopguard.agent_id": "digger",
      "loopguard.parent_run_id": childId,
      "loopguard.root_run_id": "run_p",
      "loopguard.depth": 2,
    });
    expect(toolSpan("run_p", "research").attributes["loopguard.child_run_id"]).toBe(childId);
  });

  it("agent.stream() forwards child events tagged with runId and depth; one run-end", async () => {
    const { parent, childId, grandId } = threeLevels();
    const stream = parent.stream("Handle it", { runId: "run_p" });
    const events: AgentStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect((await stream.result).status).toBe("completed");
    const depthOf = (runId: string) =>
      new Set(events.filter((event) => event.runId === runId).map((event) => event.depth));
    expect(depthOf("run_p")).toEqual(new Set([undefined]));
    expect(depthOf(childId)).toEqual(new Set([1]));
    expect(depthOf(grandId)).toEqual(new Set([2]));
    expect(events.filter((event) => event.type === "run-end")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: "run-end", runId: "run_p" });
    const grandResult = events.find(
      (event) => event.type === "tool-result" && event.runId === grandId,
    );
    expect(grandResult).toMatchObject({ tool: "issue_refund", content: "refunded", depth: 2 });
  });

  it("an ask deep in the tree parks every run on it; one approval resumes them all", async () => {
    const askRefunds: Gate = {
      name: "refund_policy",
      step: "2",
      check: (call) =>
        call.tool === "issue_refund"
          ? { type: "ask", reason: "refund_needs_approval", message: "Refunds need a person." }
          : { type: "allow" },
    };
    const { store, parent, effects, childId, grandId } = threeLevels({
      gates: [askRefunds],
      approval: { durable: true },
    });
    const parked = await parent.run("Handle it", { runId: "run_p" });
    expect(parked.status).toBe("awaiting_approval");
    expect(effects).toEqual([]);
    const statuses = Object.fromEntries((await store.list()).map((row) => [row.runId, row.status]));
    expect(statuses).toEqual({
      run_p: "awaiting_approval",
      [childId]: "awaiting_approval",
      [grandId]: "awaiting_approval",
    });
    // The root's log names the request with its chain: parent task, child task, the call.
    const wait = (await store.read("run_p")).find((event) => event.type === "child-run-wait")!;
    expect(wait).toMatchObject({
      status: "awaiting_approval",
      approvals: [
        {
          runId: grandId,
          tool: "issue_refund",
          reason: "refund_needs_approval",
          chain: [
            {
              runId: "run_p",
              agentId: "lead",
              task: "Handle it",
              callId: "toolu_p1",
              tool: "research",
            },
            {
              runId: childId,
              agentId: "researcher",
              task: "Handle the refund",
              callId: "toolu_r1",
              tool: "dig",
            },
            { runId: grandId, agentId: "digger", task: "Refund 7" },
          ],
        },
      ],
    });
    // A resume before anyone answered changes nothing and runs nothing.
    const early = await parent.resume("run_p");
    expect(early.status).toBe("awaiting_approval");
    expect(effects).toEqual([]);
    const done = await parent.approve("run_p", { decision: "approve", approver: "ops@corp" });
    expect(done).toMatchObject({ status: "completed", answer: "All done: refunded 7." });
    expect(effects).toEqual([`refund 7 ${grandId}:toolu_d1`]);
    const grandLog = await store.read(grandId);
    expect(grandLog.find((event) => event.type === "approval-decision")).toMatchObject({
      decision: "approve",
      approver: "ops@corp",
    });
    for (const runId of ["run_p", childId, grandId])
      expect((await store.read(runId)).at(-1)).toMatchObject({
        type: "run-end",
        status: "completed",
      });
  });

  it("approving the child run itself resumes the tree from its root", async () => {
    const askRefunds: Gate = {
      name: "refund_policy",
      step: "2",
      check: (call) =>
        call.tool === "issue_refund"
          ? { type: "ask", reason: "refund_needs_approval", message: "Refunds need a person." }
          : { type: "allow" },
    };
    const { store, parent, effects, grandId } = threeLevels({
      gates: [askRefunds],
      approval: { durable: true },
    });
    await parent.run("Handle it", { runId: "run_p" });
    const done = await parent.approve(grandId, { decision: "deny" });
    expect(done.runId).toBe("run_p");
    expect(done.status).toBe("completed");
    expect(effects).toEqual([]);
    expect(
      (await store.read(grandId)).find((event) => event.type === "tool-call-refusal"),
    ).toMatchObject({
      tool: "issue_refund",
    });
  });
});
