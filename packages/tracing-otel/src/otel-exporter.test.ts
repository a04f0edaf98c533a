import type { Span } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { traceIdOf } from "@loopguard/core/plugin";
import { recordingExporter } from "@loopguard/core/testing";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { runSupportDesk } from "../test/support-desk.js";
import { loopguardIdGenerator } from "./loopguard-id-generator.js";
import { captureFromEnv, otelExporter } from "./otel-exporter.js";

async function recordRun(): Promise<Span[]> {
  const recording = recordingExporter();
  await runSupportDesk({ exporters: [recording] });
  return recording.spans;
}

describe("otelExporter", () => {
  it("keeps core's ids with a span processor (the provider it builds uses loopguardIdGenerator)", async () => {
    // InMemorySpanExporter forgets its spans at shutdown, which the agent's shutdown reaches.
    const spans: ReadableSpan[] = [];
    const keep: SpanExporter = {
      export(batch, done) {
        spans.push(...batch);
        done({ code: 0 });
      },
      async shutdown() {},
    };
    const recording = recordingExporter();
    const result = await runSupportDesk({
      exporters: [
        recording,
        otelExporter({ spanProcessor: new SimpleSpanProcessor(keep), serviceName: "desk" }),
      ],
    });
    expect(spans.map((span) => span.spanContext().spanId).sort()).toEqual(
      recording.spans.map((span) => span.spanId).sort(),
    );
    expect(new Set(spans.map((span) => span.spanContext().traceId))).toEqual(
      new Set([traceIdOf(result.runId)]),
    );
    expect(spans[0]!.resource.attributes["service.name"]).toBe("desk");
  });

  it("keeps the tree whole with a provider that has its own ids (remapped, parents first)", async () => {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
    const core = await recordRun();
    const exporter = otelExporter({ tracerProvider: provider });
    // Core hands spans over children first; the run span comes last.
    for (const span of core) expect(await exporter.export([span])).toEqual({ code: "success" });
    const spans = memory.getFinishedSpans();
    expect(spans).toHaveLength(core.length);
    const ids = new Set(spans.map((span) => span.spanContext().spanId));
    const roots = spans.filter((span) => !span.parentSpanContext);
    expect(roots.map((span) => span.name)).toEqual(["invoke_agent support-desk"]);
    for (const span of spans)
      if (span.parentSpanContext)
        expect(ids.has(span.parentSpanContext.spanId), span.name).toBe(true);
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    await exporter.shutdown();
    await provider.shutdown();
  });

  it("keeps core's ids with your provider when it uses loopguardIdGenerator, and streams", async () => {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      idGenerator: loopguardIdGenerator(),
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    const core = await recordRun();
    const exporter = otelExporter({ tracerProvider: provider });
    const runSpan = core.find((span) => span.kind === "run")!;
    await exporter.export([runSpan]);
    await exporter.export(core.filter((span) => span !== runSpan).slice(0, 1));
    // After the first trace showed the ids match, spans are no longer held back.
    expect(memory.getFinishedSpans().map((span) => span.spanContext().spanId)).toEqual([
      runSpan.spanId,
      core[0]!.spanId,
    ]);
    await exporter.shutdown();
  });

  it("flushes held spans of an unfinished trace on forceFlush", async () => {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
    const core = await recordRun();
    const exporter = otelExporter({ tracerProvider: provider });
    await exporter.export(core.filter((span) => span.kind === "tool"));
    expect(memory.getFinishedSpans()).toHaveLength(0);
    await exporter.forceFlush?.();
    expect(memory.getFinishedSpans()).toHaveLength(3);
  });

  it("tells onError once when the tracer provider records nothing", async () => {
    const errors: unknown[] = [];
    const core = await recordRun();
    const noop = {
      getTracer: () =>
        new BasicTracerProvider({
          sampler: { shouldSample: () => ({ decision: 0 }), toString: () => "off" },
        }).getTracer("x"),
    };
    const exporter = otelExporter({ tracerProvider: noop, onError: (error) => errors.push(error) });
    await exporter.export(core);
    await exporter.export(core);
    expect(errors).toHaveLength(1);
    expect(String((errors[0] as Error).message)).toMatch(/records nothing/);
  });

  it("fails open: a SpanExporter that throws surfaces at forceFlush (batched) or in the result (batch: false)", async () => {
    const core = await recordRun();
    const throwing: SpanExporter = {
      export() {
        throw new Error("boom");
      },
      async shutdown() {},
    };
    const batched = otelExporter({ exporter: throwing });
    expect(await batched.export(core)).toEqual({ code: "success" });
    await expect(batched.forceFlush?.()).rejects.toThrow(
      /\[tracing-otel\] the OpenTelemetry exporter threw: boom/,
    );
    // Reported once: the next flush has nothing left to throw.
    await expect(batched.forceFlush?.()).resolves.toBeUndefined();
    await batched.shutdown();
    await batched.shutdown();
    expect((await batched.export(core)).code).toBe("failed");

    const direct = otelExporter({ exporter: throwing, batch: false });
    const result = await direct.export(core);
    expect(result.code).toBe("failed");
  });

  it("sends a batch when maxSpans wait, or delayMs after the first", async () => {
    const core = await recordRun();
    const sends: number[] = [];
    const counting: SpanExporter = {
      export(batch, done) {
        sends.push(batch.length);
        done({ code: 0 });
      },
      async shutdown() {},
    };
    const bySize = otelExporter({ exporter: counting, batch: { maxSpans: 4, delayMs: 60_000 } });
    for (const span of core) await bySize.export([span]);
    expect(sends).toEqual([4, 4]);
    await bySize.forceFlush?.();
    expect(sends).toEqual([4, 4, core.length - 8]);
    sends.length = 0;
    const byTime = otelExporter({ exporter: counting, batch: { delayMs: 5 } });
    await byTime.export(core.slice(0, 3));
    expect(sends).toEqual([]);
    await expect.poll(() => sends, { timeout: 60_000 }).toEqual([3]);
    expect(() => otelExporter({ exporter: counting, batch: { maxSpans: 0 } })).toThrow(/maxSpans/);
  });

  it("validates its options", () => {
    const provider = new BasicTracerProvider();
    expect(() =>
      otelExporter({
        tracerProvider: provider,
        spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()),
      }),
    ).toThrow(/give one of/);
    expect(() => otelExporter({ tracerProvider: provider, serviceName: "x" })).toThrow(
      /set it on your tracer provider/,
    );
    expect(() => otelExporter({ exporter: {} as never })).toThrow(InvalidArgumentError);
    expect(() => otelExporter({ captureContent: "yes" as never })).toThrow(/true or false/);
  });

  it("reads the capture switch from OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", () => {
    expect(captureFromEnv({})).toBe(false);
    expect(captureFromEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "TRUE" })).toBe(
      true,
    );
    expect(captureFromEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "false" })).toBe(
      false,
    );
    expect(() =>
      captureFromEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "yes" }),
    ).toThrow(/neither true nor false/);
  });
});
