import { childRunId, createAgent, tool } from "@loopguard/core";
import { traceIdOf } from "@loopguard/core/plugin";
import { memoryEventStore, recordingExporter, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { otelExporter, otlpTracing } from "../src/index.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./otlp-receiver.js";

// A run that delegates to another agent (asTool), exported over real OTLP/HTTP protobuf and
// decoded as a collector would: one trace, the child's invoke_agent under the parent's call.
const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

const call = (id: string, name: string, input: Record<string, unknown>) => ({
  content: [{ type: "tool_use" as const, id, name, input }],
});

/** triage -> ask_researcher (researcher) -> ask_checker (checker) -> read_scan_log. */
function tree(exporters: Parameters<typeof createAgent>[0]["exporters"]) {
  const store = memoryEventStore();
  const scanLog = tool({
    name: "read_scan_log",
    description: "Reads the courier's scan log.",
    input: v.object({ order_id: v.string() }),
    trust: "trusted",
    run: ({ order_id }) => ({ order_id, scans: ["picked", "dropped at depot"] }),
  });
  const checker = createAgent({
    agentId: "checker",
    store,
    model: scriptedModel([
      call("toolu_g1", "read_scan_log", { order_id: "A1001" }),
      { content: "Dropped at the depot." },
    ]),
    tools: [scanLog],
  });
  const researcher = createAgent({
    agentId: "researcher",
    store,
    model: scriptedModel([
      call("toolu_c1", "ask_checker", { task: "Check the scan log of A1001." }),
      { content: "The courier dropped it." },
    ]),
    tools: [checker.asTool({ name: "ask_checker", description: "Checks scan logs." })],
  });
  return createAgent({
    agentId: "triage",
    store,
    exporters,
    budget: { maxUsd: 1 },
    model: scriptedModel([
      call("toolu_r1", "ask_researcher", { task: "Why did A1001 arrive broken?" }),
      { content: "The courier dropped it." },
    ]),
    tools: [researcher.asTool({ name: "ask_researcher", description: "Researches orders." })],
  });
}

describe("a delegating run over real OTLP/HTTP protobuf", () => {
  it("sends one trace: each child's invoke_agent span is a child of its parent's execute_tool span", async () => {
    const collector = await startOtlpReceiver();
    receivers.push(collector);
    const otlp = otlpTracing({ url: collector.tracesUrl, env: { OTEL_SERVICE_NAME: "tree-test" } });
    const recording = recordingExporter();
    const agent = tree([
      recording,
      otelExporter({ exporter: otlp.exporter, resource: otlp.resource, captureContent: false }),
    ]);
    const rootRunId = "run_otlp_tree";
    const result = await agent.run("Find out why A1001 arrived broken.", { runId: rootRunId });
    expect(result.status).toBe("completed");
    // As a process does on exit: the agent flushes its exporters, then the OTLP exporter closes.
    await agent.shutdown();
    await otlp.shutdown();
    const spans = await collector.waitForSpans(recording.spans.length);
    expect(spans).toHaveLength(recording.spans.length);

    const child = childRunId(rootRunId, "toolu_r1");
    const grandchild = childRunId(child, "toolu_c1");
    // One trace: every span of the tree carries the root run's trace id.
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([traceIdOf(rootRunId)]));
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const runSpan = (agentId: string): ReceivedSpan => {
      const found = spans.filter((span) => span.name === `invoke_agent ${agentId}`);
      expect(found, `invoke_agent ${agentId}`).toHaveLength(1);
      return found[0]!;
    };
    const callSpan = (callId: string): ReceivedSpan =>
      spans.find((span) => span.attributes["gen_ai.tool.call.id"] === callId)!;
    expect(runSpan("triage").parentSpanId).toBe("");
    expect(runSpan("researcher").parentSpanId).toBe(callSpan("toolu_r1").spanId);
    expect(runSpan("checker").parentSpanId).toBe(callSpan("toolu_c1").spanId);
    expect(byId.get(callSpan("toolu_r1").spanId)!.name).toBe("execute_tool ask_researcher");
    expect(byId.get(callSpan("toolu_c1").spanId)!.name).toBe("execute_tool ask_checker");

    // The GenAI agent attributes, and the links between the runs.
    expect(runSpan("researcher").attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "researcher",
      "gen_ai.agent.id": "researcher",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.conversation.id": child,
      "loopguard.parent_run_id": rootRunId,
      "loopguard.root_run_id": rootRunId,
      "loopguard.depth": 1,
    });
    expect(runSpan("checker").attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "checker",
      "gen_ai.conversation.id": grandchild,
      "loopguard.parent_run_id": child,
      "loopguard.root_run_id": rootRunId,
      "loopguard.depth": 2,
    });
    expect(runSpan("triage").attributes["loopguard.parent_run_id"]).toBeUndefined();
    // Every span of a run names its run; the child's model calls hang under the child's run.
    const runOf = (span: ReceivedSpan): ReceivedSpan => {
      let at: ReceivedSpan | undefined = span;
      while (at && !at.name.startsWith("invoke_agent ")) at = byId.get(at.parentSpanId);
      return at!;
    };
    for (const span of spans)
      expect(span.attributes["gen_ai.conversation.id"], span.name).toBe(
        runOf(span).attributes["gen_ai.conversation.id"],
      );
    const chats = spans.filter((span) => span.name.startsWith("chat "));
    expect(chats.map((span) => runOf(span).name).sort()).toEqual(
      [
        "invoke_agent checker",
        "invoke_agent checker",
        "invoke_agent researcher",
        "invoke_agent researcher",
        "invoke_agent triage",
        "invoke_agent triage",
      ].sort(),
    );
  });
});
