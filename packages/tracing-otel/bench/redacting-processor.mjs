#!/usr/bin/env node
// What redactingSpanProcessor costs an app's own spans: the same span (an HTTP-server-like span
// with 8 attributes, one of them a customer email, an exception event and a status message)
// ended N times through a SimpleSpanProcessor over an in-memory exporter, with no redaction,
// with redactingSpanProcessor and createRedactor() from @loopguard/redact, and with a redactor
// that returns its input (the processor's own copying, without detection). Interleaved rounds,
// medians per span in µs, side by side; it asserts nothing about time.
// Build first: pnpm --filter @loopguard/redact --filter @loopguard/tracing-otel build
// Run: node bench/redacting-processor.mjs [spans per round] [rounds]
import { createRedactor } from "@loopguard/redact";
import { SpanStatusCode } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { redactingSpanProcessor } from "../dist/index.js";

const perRound = Number(process.argv[2] ?? 2_000);
const rounds = Number(process.argv[3] ?? 15);

function setup(wrap) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [wrap(new SimpleSpanProcessor(exporter))],
  });
  return { tracer: provider.getTracer("bench"), exporter };
}

const modes = {
  "no redaction": setup((next) => next),
  "identity redactor (the processor alone)": setup((next) =>
    redactingSpanProcessor(next, { redactor: (value) => value }),
  ),
  "createRedactor() (@loopguard/redact)": setup((next) =>
    redactingSpanProcessor(next, { redactor: createRedactor() }),
  ),
};

function endOne(tracer, index) {
  const span = tracer.startSpan(`POST /orders/A${index}/refund`, {
    attributes: {
      "http.request.method": "POST",
      "url.path": `/orders/A${index}/refund`,
      "http.response.status_code": 500,
      "user.email": "jane.doe@example.com",
      "server.address": "shop.example",
      "server.port": 443,
      "enduser.id": `customer-${index}`,
      "app.order.total": 89.99,
    },
  });
  span.recordException(new Error("card 4111 1111 1111 1111 declined for jane.doe@example.com"));
  span.setStatus({ code: SpanStatusCode.ERROR, message: "refund failed for jane.doe@example.com" });
  span.end();
}

const samples = Object.fromEntries(Object.keys(modes).map((name) => [name, []]));
for (let round = 0; round < rounds + 2; round += 1) {
  for (const [name, { tracer, exporter }] of Object.entries(modes)) {
    exporter.reset();
    const started = process.hrtime.bigint();
    for (let index = 0; index < perRound; index += 1) endOne(tracer, index);
    const micros = Number(process.hrtime.bigint() - started) / 1_000 / perRound;
    if (round >= 2) samples[name].push(micros); // the first two rounds warm up
    if (name.startsWith("createRedactor") && round === 0) {
      const sent = JSON.stringify(exporter.getFinishedSpans()[0]?.attributes);
      if (sent.includes("jane.doe")) throw new Error("the redacted mode let an email through");
    }
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const base = median(samples["no redaction"]);
console.log(`redactingSpanProcessor: ${perRound} spans x ${rounds} rounds, median µs per span`);
for (const [name, values] of Object.entries(samples)) {
  const value = median(values);
  console.log(
    `  ${name.padEnd(42)} ${value.toFixed(1).padStart(7)} µs   x${(value / base).toFixed(2)}`,
  );
}
