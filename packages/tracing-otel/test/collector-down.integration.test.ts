/**
 * A trace collector that is down never holds a run: runs end when their log is
 * durable, the real OTLP/HTTP exporter sends in core's background queue, and the agent's
 * shutdown keeps its deadline. Against a port that refuses connections and a server that
 * accepts requests and never answers.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAgent, ExportDroppedError, tool } from "@loopguard/core";
import { callUntilResult } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { otelExporter, otlpTracing } from "../src/index.js";

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
 * The OTLP exporter's timeout: longer than any test may run, so a run or a shutdown that waited
 * for it fails on the test timeout, whatever the machine's pace (no bound here is on speed).
 */
const exporterTimeoutMs = 600_000;

async function runMany(url: string, runs: number) {
  const otlp = otlpTracing({ url, timeoutMillis: exporterTimeoutMs, env: {} });
  const errors: Array<{ error: unknown; where: string }> = [];
  const agent = createAgent({
    model: model(),
    tools: [lookup],
    exporters: [otelExporter({ exporter: otlp.exporter, resource: otlp.resource })],
    onError: (error, where) => errors.push({ error, where }),
  });
  let slowestMs = 0;
  const started = performance.now();
  for (let index = 0; index < runs; index += 1) {
    const runStarted = performance.now();
    expect((await agent.run("Where is A1?")).status).toBe("completed");
    slowestMs = Math.max(slowestMs, performance.now() - runStarted);
  }
  const totalMs = performance.now() - started;
  const shutdownStarted = performance.now();
  await agent.shutdown({ deadlineMs: 500 });
  const shutdownMs = performance.now() - shutdownStarted;
  console.log(
    `[collector down] ${url}: ${runs} runs in ${totalMs.toFixed(0)} ms (slowest ${slowestMs.toFixed(0)} ms), shutdown ${shutdownMs.toFixed(0)} ms, ${errors.length} reports to onError`,
  );
  return { totalMs, slowestMs, shutdownMs, errors };
}

describe("a trace collector that is down never holds a run", () => {
  it("refusing connections: 200 runs end without waiting for the OTLP exporter's timeout; shutdown keeps its 500 ms deadline", async () => {
    const closed = createServer();
    const url = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const { totalMs, slowestMs, shutdownMs, errors } = await runMany(url, 200);
    // Before: each run awaited the exporter's flush, retried up to its 10 s deadline.
    expect(slowestMs).toBeLessThan(exporterTimeoutMs);
    expect(totalMs).toBeLessThan(exporterTimeoutMs);
    expect(shutdownMs).toBeLessThan(exporterTimeoutMs);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((item) => item.where === "exporter otel")).toBe(true);
  }, 300_000);

  it("never answering: 200 runs end at once; sends time out in the background, drops are counted; shutdown keeps its deadline", async () => {
    const sockets = new Set<import("node:net").Socket>();
    const hanging = createServer(() => {
      // Accept the request and never answer.
    });
    hanging.on("connection", (socket) => sockets.add(socket));
    const url = await listen(hanging);
    try {
      const { totalMs, slowestMs, shutdownMs, errors } = await runMany(url, 200);
      expect(slowestMs).toBeLessThan(exporterTimeoutMs);
      expect(totalMs).toBeLessThan(exporterTimeoutMs);
      expect(shutdownMs).toBeLessThan(exporterTimeoutMs);
      // The one send in flight holds the queue; everything past its bound was dropped, counted.
      const drops = errors.filter((item) => ExportDroppedError.isInstance(item.error));
      expect(drops.length).toBeGreaterThan(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hanging.close(resolve));
    }
  }, 300_000);
});
