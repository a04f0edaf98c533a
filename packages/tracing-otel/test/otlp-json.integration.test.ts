import { recordingExporter } from "@loopguard/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { otelExporter, otlpJsonOf, otlpTracing } from "../src/index.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./otlp-receiver.js";
import { customerEmail, runSupportDesk } from "./support-desk.js";

const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(): Promise<OtlpReceiver> {
  const started = await startOtlpReceiver();
  receivers.push(started);
  return started;
}

/** A received span without what differs by design (the SDK's resource carries telemetry.sdk.*). */
const comparable = ({ resource: _resource, ...span }: ReceivedSpan) => span;
const bySpanId = (left: { spanId: string }, right: { spanId: string }) =>
  left.spanId.localeCompare(right.spanId);

describe("otlpJsonOf: a run as an OTLP/JSON file", () => {
  it("decodes to exactly what otelExporter sends over OTLP/HTTP protobuf: names, kinds, ids, parents, times, attributes, events, status", async () => {
    const wire = await receiver();
    const otlp = otlpTracing({ url: wire.tracesUrl, env: { OTEL_SERVICE_NAME: "support-desk" } });
    const recording = recordingExporter();
    const result = await runSupportDesk({
      exporters: [
        recording,
        otelExporter({ exporter: otlp.exporter, resource: otlp.resource, captureContent: false }),
      ],
    });
    expect(result.status).toBe("completed");
    const sent = await wire.waitForSpans(recording.spans.length);
    await otlp.shutdown();

    const file = otlpJsonOf(recording.spans, { serviceName: "support-desk" });
    // A collector takes the file as the body of an OTLP/HTTP JSON export.
    const upload = await receiver();
    const response = await fetch(upload.tracesUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(file),
    });
    expect(response.status).toBe(200);
    const uploaded = await upload.waitForSpans(recording.spans.length);
    expect(uploaded.map(comparable).sort(bySpanId)).toEqual(sent.map(comparable).sort(bySpanId));
    expect(uploaded[0]!.resource["service.name"]).toBe("support-desk");
    // The OTLP/JSON rules: hex ids, decimal-string nanoseconds, enums as integers.
    const first = file.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(first.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(first.startTimeUnixNano).toMatch(/^\d{19}$/);
    expect(typeof first.kind).toBe("number");
    expect(JSON.stringify(file)).not.toContain(customerEmail);
  });

  it("refuses what is not a span list, naming the fix", () => {
    expect(() => otlpJsonOf("spans" as never)).toThrow(/spans must be an array of loopguard spans/);
    expect(() => otlpJsonOf([{ traceId: "x" } as never])).toThrow(
      /spans\[0\] is not a loopguard span with a 32-hex traceId/,
    );
    expect(() => otlpJsonOf([], { serviceName: "" })).toThrow(/serviceName must be a non-empty/);
  });
});
