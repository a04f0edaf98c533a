#!/usr/bin/env node
// What tracing costs a run: the same 3-step support-desk run (3 model calls, 3 tool calls,
// 10 spans) with no exporter, with core's in-memory recorder, and with otelExporter sending
// OTLP/HTTP protobuf to a loopback receiver (the real exporter, the real wire format).
// Build first: (cd ../core && npx tsc -p tsconfig.build.json) && npx tsc -p tsconfig.build.json
// Run: node bench/export-overhead.mjs [runs]. Prints figures; asserts nothing about time.
import { createServer } from "node:http";
import { createAgent, tool } from "@loopguard/core";
import { recordingExporter, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { otelExporter, otlpTracing } from "../dist/index.js";

const runs = Number(process.argv[2] ?? 200);
let bytes = 0;
let requests = 0;
const server = createServer((request, response) => {
  request.on("data", (chunk) => (bytes += chunk.length));
  request.on("end", () => {
    requests += 1;
    response.writeHead(200, { "content-type": "application/x-protobuf" });
    response.end();
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${server.address().port}/v1/traces`;

const tools = [
  tool({
    name: "lookup_order",
    description: "Look up.",
    input: v.object({ order_id: v.string() }),
    run: ({ order_id }) => ({ order_id, total: 89.99 }),
  }),
  tool({
    name: "issue_refund",
    description: "Refund.",
    input: v.object({ order_id: v.string() }),
    run: () => ({ ok: true }),
  }),
  tool({
    name: "send_email",
    description: "Email.",
    input: v.object({ to: v.string() }),
    run: () => ({ sent: true }),
  }),
];
const gate = {
  name: "policy",
  step: "2",
  check: (call) =>
    call.tool === "send_email"
      ? { type: "deny", reason: "policy_deny", message: "no" }
      : { type: "allow" },
};
const script = () =>
  scriptedModel([
    { content: [{ type: "tool_use", id: "t1", name: "lookup_order", input: { order_id: "A1" } }] },
    {
      content: [
        { type: "tool_use", id: "t2", name: "issue_refund", input: { order_id: "A1" } },
        { type: "tool_use", id: "t3", name: "send_email", input: { to: "x@y.z" } },
      ],
    },
    { content: "Done." },
  ]);

const otlp = otlpTracing({ url, env: {} });
const modes = {
  none: () => [],
  recording: () => [recordingExporter()],
  "otel → OTLP": ((shared) => () => [shared])(
    otelExporter({ exporter: otlp.exporter, captureContent: true }),
  ),
  "otel, no batch": ((shared) => () => [shared])(
    otelExporter({ exporter: otlp.exporter, captureContent: true, batch: false }),
  ),
};
const times = Object.fromEntries(Object.keys(modes).map((mode) => [mode, []]));
for (let index = 0; index < runs + 20; index += 1) {
  for (const [mode, exporters] of Object.entries(modes)) {
    const started = performance.now();
    const agent = createAgent({ model: script(), tools, gates: [gate], exporters: exporters() });
    const result = await agent.run("refund A1");
    if (result.status !== "completed") throw new Error(`run ${mode} ended ${result.status}`);
    // Warm-up rounds are not counted.
    if (index >= 20) times[mode].push(performance.now() - started);
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const base = median(times.none);
console.log(`runs per mode: ${runs} (interleaved), node ${process.version}`);
for (const [mode, values] of Object.entries(times)) {
  console.log(
    `${mode.padEnd(14)} median ${median(values).toFixed(3)} ms/run   ×${(median(values) / base).toFixed(2)} vs none`,
  );
}
// Both otel modes send the same spans: 10 per run, content captured.
const spansSent = (runs + 20) * 2 * 10;
console.log(
  `OTLP (both otel modes): ${requests} requests, ${(bytes / 1024).toFixed(1)} KiB, ${(bytes / spansSent).toFixed(0)} bytes/span with content`,
);
await otlp.shutdown();
server.close();
