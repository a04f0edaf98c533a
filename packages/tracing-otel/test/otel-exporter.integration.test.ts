import type { Span } from "@loopguard/core";
import { traceIdOf } from "@loopguard/core/plugin";
import { recordingExporter } from "@loopguard/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { otelExporter, otlpTracing, TraceExportError } from "../src/index.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./otlp-receiver.js";
import {
  answer,
  cardNumber,
  contentMarker,
  customerEmail,
  runSupportDesk,
  task,
  testRedactor,
} from "./support-desk.js";

const model = "claude-sonnet-5-5";
const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(): Promise<OtlpReceiver> {
  const started = await startOtlpReceiver();
  receivers.push(started);
  return started;
}

function only(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, `spans named ${name}`).toHaveLength(1);
  return found[0]!;
}

describe("otelExporter over real OTLP/HTTP protobuf", () => {
  it("delivers a support-desk run with GenAI names, kinds, parents, ids, times and attributes", async () => {
    const collector = await receiver();
    const otlp = otlpTracing({
      url: collector.tracesUrl,
      env: {
        OTEL_SERVICE_NAME: "support-desk-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=payments",
      },
    });
    const recording = recordingExporter();
    const errors: unknown[] = [];
    const result = await runSupportDesk({
      exporters: [
        recording,
        otelExporter({ exporter: otlp.exporter, resource: otlp.resource, captureContent: false }),
      ],
      onError: (error) => errors.push(error),
    });
    expect(result.status).toBe("completed");
    expect(errors).toEqual([]);
    const core: Span[] = recording.spans;
    const spans = await collector.waitForSpans(core.length);
    expect(spans).toHaveLength(core.length);

    // Names and kinds: INTERNAL 1, CLIENT 3.
    expect(spans.map((span) => span.name).sort()).toEqual(
      [
        "invoke_agent support-desk",
        "step 1",
        "step 2",
        "step 3",
        `chat ${model}`,
        `chat ${model}`,
        `chat ${model}`,
        "execute_tool lookup_order",
        "execute_tool issue_refund",
        "execute_tool send_email",
      ].sort(),
    );
    for (const span of spans)
      expect(span.kind, span.name).toBe(span.name.startsWith("chat ") ? 3 : 1);

    // Ids, parents and times are core's.
    const run = only(spans, "invoke_agent support-desk");
    expect(run.traceId).toBe(traceIdOf(result.runId));
    expect(run.parentSpanId).toBe("");
    for (const span of spans) {
      const twin = core.find((candidate) => candidate.spanId === span.spanId);
      expect(twin, `core span for ${span.name}`).toBeDefined();
      expect(span.traceId).toBe(twin!.traceId);
      expect(span.parentSpanId).toBe(twin!.parentSpanId ?? "");
      expect(span.startTimeUnixNano).toBe(BigInt(twin!.startTime) * 1_000_000n);
      expect(span.endTimeUnixNano).toBe(BigInt(twin!.endTime) * 1_000_000n);
      expect(span.attributes["gen_ai.conversation.id"]).toBe(result.runId);
      expect(span.resource["service.name"]).toBe("support-desk-test");
      expect(span.resource["deployment.environment"]).toBe("test");
      expect(span.scope).toBe("@loopguard/tracing-otel");
    }
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const parentName = (span: ReceivedSpan) => byId.get(span.parentSpanId)?.name;
    expect(parentName(only(spans, "step 1"))).toBe("invoke_agent support-desk");
    expect(parentName(only(spans, "execute_tool lookup_order"))).toBe("step 1");
    expect(parentName(only(spans, "execute_tool send_email"))).toBe("step 2");
    for (const chat of collector.spansNamed(`chat ${model}`))
      expect(parentName(chat)).toMatch(/^step \d$/);

    // The run.
    expect(run.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.agent.name": "support-desk",
      "gen_ai.agent.id": "support-desk",
      "gen_ai.request.model": model,
      "loopguard.status": "completed",
    });
    expect(run.status.code).toBe(1);

    // The first model call: cache reads and writes are inside the input count.
    const firstChat = collector
      .spansNamed(`chat ${model}`)
      .find((span) => span.attributes["gen_ai.response.id"] === "msg_1")!;
    expect(firstChat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": model,
      "gen_ai.response.model": model,
      "gen_ai.response.finish_reasons": ["tool_use"],
      "gen_ai.usage.input_tokens": 1200 + 800 + 300,
      "gen_ai.usage.cache_read.input_tokens": 800,
      "gen_ai.usage.cache_creation.input_tokens": 300,
      "gen_ai.usage.output_tokens": 40,
    });
    expect(firstChat.attributes["loopguard.cost_usd"]).toBeGreaterThan(0);
    expect(firstChat.attributes).not.toHaveProperty("loopguard.usage.input_tokens");

    // The refused call: error status, the block reason, the decision record, the gate event.
    const email = only(spans, "execute_tool send_email");
    expect(email.status.code).toBe(2);
    // The gate's free-text message quotes the address: without capture, only the code is sent.
    expect(email.status.message).toBe("refused: policy_deny");
    expect(email.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "send_email",
      "gen_ai.tool.call.id": "toolu_email",
      "error.type": "policy_deny",
      "loopguard.blocked": true,
      "loopguard.block.reason": "policy_deny",
    });
    expect(String(email.attributes["loopguard.decision"])).toContain("2:policy");
    expect(email.events.map((event) => event.name)).toContain("gate.decision");
    expect(
      email.events.find((event) => event.name === "gate.decision")!.attributes["loopguard.outcome"],
    ).toBe("deny");

    // The flagged tool output.
    const lookup = only(spans, "execute_tool lookup_order");
    expect(lookup.attributes["loopguard.injection.verdict"]).toBe("suspicious");
    const flag = lookup.events.find((event) => event.name === "injection.flagged");
    expect(flag?.attributes["loopguard.injection.rules"]).toEqual(["ignore_previous"]);
    expect(only(spans, "execute_tool issue_refund").status.code).toBe(1);

    // Capture is off: no message content left the process.
    for (const span of spans) {
      for (const key of [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
      ])
        expect(span.attributes).not.toHaveProperty(key);
    }
    const raw = collector.rawBytes().toString("latin1");
    expect(raw).toContain("execute_tool send_email");
    for (const secret of [
      contentMarker,
      "Let me look up",
      answer,
      "damaged",
      "IGNORE PREVIOUS",
      customerEmail,
    ])
      expect(raw).not.toContain(secret);
    expect(
      collector.requests.every((request) => request.contentType === "application/x-protobuf"),
    ).toBe(true);
    await otlp.shutdown();
  });

  it("fails open when the collector is down: the run completes and the error reaches onError", async () => {
    const closed = await startOtlpReceiver();
    const url = closed.tracesUrl;
    await closed.close();
    const otlp = otlpTracing({ url, timeoutMillis: 800 });
    const errors: Array<{ error: unknown; where: string }> = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const result = await runSupportDesk({
        exporters: [otelExporter({ exporter: otlp.exporter, resource: otlp.resource })],
        onError: (error, where) => errors.push({ error, where }),
      });
      expect(result.status).toBe("completed");
      expect(result.answer).toBe(answer);
      expect(errors.length).toBeGreaterThan(0);
      const first = errors[0]!;
      expect(first.where).toBe("exporter otel");
      expect(TraceExportError.isInstance(first.error)).toBe(true);
      // Known at the first refused connection, not after the OTLP exporter's retries.
      expect((first.error as Error).message).toMatch(
        /^\[tracing-otel\] \d+ span\(s\) not sent: the collector is down \(connect ECONNREFUSED/,
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("with content capture on and createAgent's redact, content arrives in GenAI message format with no PII", async () => {
    const collector = await receiver();
    const otlp = otlpTracing({ url: collector.tracesUrl, env: {} });
    const recording = recordingExporter();
    const result = await runSupportDesk({
      exporters: [
        recording,
        otelExporter({ exporter: otlp.exporter, resource: otlp.resource, captureContent: true }),
      ],
      redact: testRedactor,
    });
    expect(result.status).toBe("completed");
    const spans = await collector.waitForSpans(recording.spans.length);
    const raw = collector.rawBytes().toString("latin1");
    // The content did arrive...
    expect(raw).toContain(contentMarker);
    expect(raw).toContain("[EMAIL]");
    expect(raw).toContain("[CARD]");
    // ...and none of the PII did, in any form.
    for (const secret of [customerEmail, "jane.doe", cardNumber, cardNumber.replaceAll(" ", "")])
      expect(raw).not.toContain(secret);

    const run = only(spans, "invoke_agent support-desk");
    expect(JSON.parse(String(run.attributes["gen_ai.input.messages"]))).toEqual([
      { role: "user", parts: [{ type: "text", content: task.replace(customerEmail, "[EMAIL]") }] },
    ]);
    expect(JSON.parse(String(run.attributes["gen_ai.output.messages"]))).toEqual([
      {
        role: "assistant",
        parts: [{ type: "text", content: answer.replace(customerEmail, "[EMAIL]") }],
        finish_reason: "end_turn",
      },
    ]);
    const secondChat = collector
      .spansNamed(`chat ${model}`)
      .find((span) => span.attributes["gen_ai.response.id"] === "msg_2")!;
    const output = JSON.parse(String(secondChat.attributes["gen_ai.output.messages"]));
    expect(output[0].role).toBe("assistant");
    expect(output[0].finish_reason).toBe("tool_use");
    expect(
      output[0].parts.map((part: { type: string; name?: string }) => `${part.type}:${part.name}`),
    ).toEqual(["tool_call:issue_refund", "tool_call:send_email"]);
    expect(output[0].parts[1].arguments.to).toBe("[EMAIL]");
    const lookup = only(spans, "execute_tool lookup_order");
    expect(JSON.parse(String(lookup.attributes["gen_ai.tool.call.arguments"]))).toEqual({
      order_id: "A1001",
    });
    expect(String(lookup.attributes["gen_ai.tool.call.result"])).toContain("[CARD]");
    expect(only(spans, "execute_tool send_email").status.message).toBe(
      "send_email to [EMAIL] is outside acme-shop.com",
    );
    await otlp.shutdown();
  });

  it("with capture on and no redact anywhere, createAgent refuses the agent and names createRedactor()", async () => {
    const otlp = otlpTracing({ url: "http://127.0.0.1:9/v1/traces", env: {} });
    await expect(
      runSupportDesk({
        exporters: [otelExporter({ exporter: otlp.exporter, captureContent: true })],
      }),
    ).rejects.toThrow(
      /\[core\] createAgent(?: \(agent "support-desk"\))?: exporter "otel" captures message content but the agent has no redact: pass redact: createRedactor\(\) from @loopguard\/redact \(or redact: false/,
    );
    await otlp.shutdown();
  });

  it("with capture on and redact: false, the planted PII does reach the collector (the opt-out is real; the test can fail)", async () => {
    const collector = await receiver();
    const otlp = otlpTracing({ url: collector.tracesUrl, env: {} });
    await runSupportDesk({
      exporters: [otelExporter({ exporter: otlp.exporter, captureContent: true })],
      redact: false,
    });
    await collector.waitForSpans(10);
    expect(collector.rawBytes().toString("latin1")).toContain(customerEmail);
    await otlp.shutdown();
  });

  it("redacts content itself when given redact (defence in depth)", async () => {
    const collector = await receiver();
    const otlp = otlpTracing({ url: collector.tracesUrl, env: {} });
    await runSupportDesk({
      exporters: [
        otelExporter({ exporter: otlp.exporter, captureContent: true, redact: testRedactor }),
      ],
    });
    const spans = await collector.waitForSpans(10);
    const content = spans
      .flatMap((span) =>
        [
          "gen_ai.input.messages",
          "gen_ai.output.messages",
          "gen_ai.tool.call.arguments",
          "gen_ai.tool.call.result",
        ].map((key) => String(span.attributes[key] ?? "")),
      )
      .join("\n");
    expect(content).toContain("[EMAIL]");
    expect(content).not.toContain(customerEmail);
    expect(content).not.toContain(cardNumber);
    expect(spans[0]!.resource["service.name"]).toBe("loopguard");
    await otlp.shutdown();
  });
});
