import { redactingSpanProcessor } from "@loopguard/tracing-otel";
import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

// Your app's existing setup. The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_EXPORTER_OTLP_HEADERS (Jaeger and Honeycomb: see above). The one change: the
// processor that exports is wrapped, so it only ever sees redacted spans.
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "checkout" }),
  spanProcessors: [redactingSpanProcessor(new BatchSpanProcessor(new OTLPTraceExporter()))],
});
provider.register();

// Anywhere in the app (or in an instrumentation library): spans as they are written today.
const tracer = trace.getTracer("checkout");
tracer.startActiveSpan("charge jane.doe@example.com", (span) => {
  span.setAttribute("customer.card", "4111 1111 1111 1111");
  span.setAttribute("amount_usd", 89.99);
  span.addEvent("receipt sent", { to: "jane.doe@example.com" });
  span.end();
});

await provider.shutdown(); // on exit: flushes the last batch
