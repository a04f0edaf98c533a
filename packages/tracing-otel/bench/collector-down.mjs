#!/usr/bin/env node
// How long agent.shutdown() takes when the OTLP collector is down, and what it reports lost:
// the real OTLP/HTTP protobuf exporter (otlpTracing + otelExporter, default settings: OTLP
// timeout 10 s, failFast.answerWithinMs 5 s, shutdown deadline 10 s) against a healthy loopback
// receiver, a port that refuses connections, a server that accepts and never answers
// (blackhole), and receivers that answer 500 or 429.
// Two rows per collector: "warm", runs spread over `spreadMs` before the shutdown (a server that
// has been up a while: the collector's state is known by then), and "cold", the shutdown right
// after the first run (a send may still be in flight: a blackhole costs answerWithinMs).
// Build first: pnpm --filter @loopguard/core build && pnpm --filter @loopguard/tracing-otel build
// Run: node bench/collector-down.mjs [runs] [spreadMs]. Exit 1 when a warm shutdown with a
// refused or blackholed collector takes over 1 s (the goal), or a healthy one loses spans.
import { createServer } from "node:http";
import { createAgent, memoryEventStore, tool } from "@loopguard/core";
import { recordingExporter, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { otelExporter, otlpTracing } from "../dist/index.js";

const runs = Number(process.argv[2] ?? 30);
const spreadMs = Number(process.argv[3] ?? 6_000);
const goalMs = 1_000;

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: ({ order_id }) => `Order ${order_id}: delivered`,
});
const model = () =>
  scriptedModel((request) =>
    request.messages.length < 2
      ? {
          content: [
            { type: "tool_use", id: "tu_1", name: "lookup_order", input: { order_id: "A1" } },
          ],
        }
      : { content: "Delivered." },
  );

/** A loopback server answering every request with `status` (0: never answers). */
async function collector(status) {
  const sockets = new Set();
  const server = createServer((request, response) => {
    request.resume();
    if (status === 0) return;
    request.on("end", () => {
      response.writeHead(status, { "content-type": "application/x-protobuf" });
      response.end();
    });
  });
  server.on("connection", (socket) => sockets.add(socket));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/v1/traces`;
  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url, close };
}

async function refusing() {
  const { url, close } = await collector(200);
  await close();
  return { url, close: async () => {} };
}

async function measure(name, make, warm) {
  const target = await make();
  const otlp = otlpTracing({ url: target.url, env: {} });
  const recording = recordingExporter();
  const agent = createAgent({
    model: model(),
    tools: [lookup],
    store: memoryEventStore(),
    exporters: [otelExporter({ exporter: otlp.exporter, resource: otlp.resource }), recording],
    onError: () => undefined,
  });
  const count = warm ? runs : 1;
  for (let index = 0; index < count; index += 1) {
    await agent.run("Where is A1?");
    if (warm) await new Promise((resolve) => setTimeout(resolve, spreadMs / runs));
  }
  const started = performance.now();
  const report = await agent.shutdown();
  const shutdownMs = performance.now() - started;
  await target.close();
  return {
    collector: name,
    when: warm ? "warm" : "cold",
    shutdownMs: Math.round(shutdownMs),
    spans: recording.spans.length,
    dropped: report.dropped,
  };
}

const collectors = [
  ["healthy", () => collector(200)],
  ["refused", refusing],
  ["blackhole", () => collector(0)],
  ["http 500", () => collector(500)],
  ["http 429", () => collector(429)],
];
const rows = [];
for (const warm of [true, false])
  for (const [name, make] of collectors) {
    const row = await measure(name, make, warm);
    rows.push(row);
    console.log(JSON.stringify(row));
  }
const misses = rows.filter(
  (row) =>
    (row.when === "warm" &&
      ["refused", "blackhole"].includes(row.collector) &&
      row.shutdownMs > goalMs) ||
    (row.collector === "healthy" && row.dropped !== 0),
);
console.log(JSON.stringify({ goalMs, met: misses.length === 0, misses: misses.length }));
process.exit(misses.length === 0 ? 0 : 1);
