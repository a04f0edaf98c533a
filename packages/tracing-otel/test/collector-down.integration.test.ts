/**
 * A trace collector that is down never holds a run, and the agent's shutdown says what was lost:
 * runs end when their log is durable, the real OTLP/HTTP exporter sends in core's background
 * queue, a collector known down is not waited on, and `agent.shutdown()` reports the spans that
 * never reached it (a count, 0 when all did). Against a port that refuses connections, a server
 * that accepts requests and never answers, receivers that answer 500 or 429, and a healthy one.
 * Nothing here is bounded by the machine's pace: deadlines are far above it, and what is
 * asserted is counts (how fast shutdown is, is measured in bench/collector-down.mjs).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { createAgent, tool } from "@loopguard/core";
import { callUntilResult, memoryEventStore, recordingExporter } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { otelExporter, otlpTracing } from "../src/index.js";
import { startOtlpReceiver } from "./otlp-receiver.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: ({ order_id }) => `Order ${order_id}: delivered`,
});

const model = () =>
  callUntilResult({ id: "tu_1", name: "lookup_order", input: { order_id: "A1" } }, "Delivered.");

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
}

/**
 * The OTLP exporter's timeout and the shutdown deadline: longer than any test may run, so a run
 * or a shutdown that waited for them fails on the test timeout, whatever the machine's pace.
 */
const farMs = 600_000;

async function runMany(url: string, runs: number, answerWithinMs: number, batch?: false) {
  const otlp = otlpTracing({ url, timeoutMillis: farMs, env: {} });
  const errors: Array<{ error: unknown; where: string }> = [];
  const recording = recordingExporter();
  const agent = createAgent({
    model: model(),
    tools: [lookup],
    store: memoryEventStore(),
    exporters: [
      otelExporter({
        exporter: otlp.exporter,
        resource: otlp.resource,
        failFast: { answerWithinMs },
        ...(batch === false ? { batch } : {}),
      }),
      recording,
    ],
    onError: (error, where) => errors.push({ error, where }),
  });
  for (let index = 0; index < runs; index += 1)
    expect((await agent.run("Where is A1?")).status).toBe("completed");
  const report = await agent.shutdown({ deadlineMs: farMs });
  const otel = report.exporters.find((item) => item.name === "otel")!;
  return { otel, report, total: recording.spans.length, errors };
}

describe("a trace collector that is down never holds a run or a shutdown, and the loss is counted", () => {
  it("refusing connections: every span is reported dropped, and shutdown returns", async () => {
    const closed = createServer();
    const url = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const { otel, report, total, errors } = await runMany(url, 20, farMs);
    expect(total).toBeGreaterThan(0);
    expect(otel).toMatchObject({ dropped: total, finished: true });
    expect(report.dropped).toBe(total);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((item) => item.where === "exporter otel")).toBe(true);
    // A refused connection is known at once: the OTLP exporter's own retries are not awaited.
    expect(errors.some((item) => /ECONNREFUSED/.test(String((item.error as Error).message)))).toBe(
      true,
    );
  }, 300_000);

  it("refusing connections with batch: false: each span counted once (core's failed sends and the exporter's own)", async () => {
    const closed = createServer();
    const url = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const { otel, total } = await runMany(url, 20, farMs, false);
    expect(otel).toMatchObject({ dropped: total, finished: true });
  }, 300_000);

  it("never answering: the silent collector is marked down, every span is reported dropped", async () => {
    const sockets = new Set<Socket>();
    const hanging = createServer(() => {
      // Accept the request and never answer.
    });
    hanging.on("connection", (socket) => sockets.add(socket));
    const url = await listen(hanging);
    try {
      const { otel, report, total, errors } = await runMany(url, 20, 1_000);
      expect(otel).toMatchObject({ dropped: total, finished: true });
      expect(report.dropped).toBe(total);
      expect(errors.some((item) => /no answer within 1000 ms/.test(String(item.error)))).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hanging.close(resolve));
    }
  }, 300_000);

  for (const status of [500, 429]) {
    it(`answering ${status}: every span is reported dropped, and shutdown returns`, async () => {
      const receiver = await startOtlpReceiver({ status });
      try {
        const { otel, total } = await runMany(receiver.tracesUrl, 20, 1_000);
        expect(receiver.requests.length).toBeGreaterThan(0);
        expect(receiver.spans).toHaveLength(0);
        expect(otel).toMatchObject({ dropped: total, finished: true });
      } finally {
        await receiver.close();
      }
    }, 300_000);
  }

  it("healthy: nothing is dropped (0, not a missing count) and the receiver has every span", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const { otel, report, total, errors } = await runMany(receiver.tracesUrl, 20, farMs);
      expect(errors).toEqual([]);
      expect(report.dropped).toBe(0);
      expect(otel).toEqual({ name: "otel", dropped: 0, finished: true });
      expect(receiver.spans).toHaveLength(total);
    } finally {
      await receiver.close();
    }
  }, 300_000);
});
