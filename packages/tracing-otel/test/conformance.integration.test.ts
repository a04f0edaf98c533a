import { describeExporter } from "@loopguard/core/testing";
import { afterAll } from "vitest";
import { otelExporter, otlpTracing } from "../src/index.js";
import { type OtlpReceiver, startOtlpReceiver } from "./otlp-receiver.js";

// The exporter over real OTLP/HTTP protobuf, checked by core's Exporter conformance suite.
const receivers: OtlpReceiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
});
const collectors = new WeakMap<object, OtlpReceiver>();

await describeExporter({
  name: "otelExporter over OTLP/HTTP",
  create: async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const exporter = otelExporter({
      exporter: otlpTracing({ url: receiver.tracesUrl, timeoutMillis: 2_000 }).exporter,
      onError: () => {},
    });
    collectors.set(exporter, receiver);
    return exporter;
  },
  received: (exporter) =>
    collectors.get(exporter)!.spans.map((span) => ({
      traceId: span.traceId,
      spanId: span.spanId,
      ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    })) as never,
  createBroken: async () => {
    const receiver = await startOtlpReceiver();
    const url = receiver.tracesUrl;
    await receiver.close();
    return otelExporter({
      exporter: otlpTracing({ url, timeoutMillis: 500 }).exporter,
      onError: () => {},
    });
  },
});
