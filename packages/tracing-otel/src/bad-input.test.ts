// Every public factory of @loopguard/tracing-otel, fed input it cannot use: each must throw a
// loopguard error whose message starts with `[tracing-otel]`, names the option or variable and
// says what to set instead. A raw TypeError, or nonsense accepted silently, fails here.
import { thrownError as thrown } from "@loopguard/core/testing";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { OtlpConfigError, otelExporter, otlpTracing } from "./index.js";
import { captureFromEnv, genAiSpanOf } from "./internal/index.js";

// biome-ignore lint/suspicious/noExplicitAny: these tests pass what the types forbid.
const bad = (value: unknown): any => value;

const exporter = () => new InMemorySpanExporter();

describe("bad input to every public factory of @loopguard/tracing-otel", () => {
  const cases: [string, () => unknown, RegExp][] = [
    [
      "otelExporter: failFast a number",
      () => otelExporter({ exporter: exporter(), failFast: bad(5000) }),
      /failFast must be an object/,
    ],
    [
      "otelExporter: failFast.answerWithinMs 0",
      () => otelExporter({ exporter: exporter(), failFast: { answerWithinMs: 0 } }),
      /failFast\.answerWithinMs must be a whole number of milliseconds from 1 to 600000/,
    ],
    [
      "otelExporter: failFast.probeAfterMs Infinity",
      () => otelExporter({ exporter: exporter(), failFast: { probeAfterMs: Infinity } }),
      /failFast\.probeAfterMs must be a whole number/,
    ],
    [
      "otelExporter: options a string",
      () => otelExporter(bad("otlp")),
      /options must be an object/,
    ],
    [
      "otelExporter: two sinks",
      () => otelExporter({ exporter: exporter(), tracerProvider: bad({ getTracer() {} }) }),
      /give one of exporter, spanProcessor or tracerProvider, not exporter and tracerProvider/,
    ],
    [
      "otelExporter: exporter a URL",
      () => otelExporter({ exporter: bad("http://x") }),
      /SpanExporter/,
    ],
    [
      "otelExporter: spanProcessor {}",
      () => otelExporter({ spanProcessor: bad({}) }),
      /SpanProcessor/,
    ],
    [
      "otelExporter: tracerProvider {}",
      () => otelExporter({ tracerProvider: bad({}) }),
      /TracerProvider/,
    ],
    [
      "otelExporter: serviceName alone",
      () => otelExporter({ serviceName: "x" }),
      /applies only with exporter/,
    ],
    [
      "otelExporter: empty serviceName",
      () => otelExporter({ exporter: exporter(), serviceName: " " }),
      /serviceName must be a non-empty string/,
    ],
    [
      "otelExporter: redact a string",
      () => otelExporter({ redact: bad("all") }),
      /redact must be a function/,
    ],
    [
      "otelExporter: onError a string",
      () => otelExporter({ onError: bad("log") }),
      /onError must be a function/,
    ],
    [
      "otelExporter: captureContent a string",
      () => otelExporter({ captureContent: bad("yes") }),
      /captureContent must be true or false/,
    ],
    [
      "otelExporter: batch 5",
      () => otelExporter({ exporter: exporter(), batch: bad(5) }),
      /batch must be false or/,
    ],
    [
      "otelExporter: batch.maxSpans 0",
      () => otelExporter({ exporter: exporter(), batch: { maxSpans: 0 } }),
      /batch\.maxSpans/,
    ],
    [
      "otelExporter: batch.delayMs -1",
      () => otelExporter({ exporter: exporter(), batch: { delayMs: -1 } }),
      /batch\.delayMs/,
    ],
    [
      "otelExporter: resource without attributes",
      () => otelExporter({ exporter: exporter(), resource: bad({ "service.name": "x" }) }),
      /^\[tracing-otel\] otelExporter: resource must be an OpenTelemetry Resource/,
    ],
    [
      "otelExporter: env a string",
      () => otelExporter({ env: bad("production") }),
      /^\[tracing-otel\] otelExporter: env must be an object/,
    ],
    [
      "otelExporter: capture variable neither true nor false",
      () => otelExporter({ env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "yes" } }),
      /OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="yes" is neither true nor false/,
    ],
    ["otlpTracing: options a number", () => otlpTracing(bad(4318)), /options must be an object/],
    [
      "otlpTracing: url not a URL",
      () => otlpTracing({ url: "localhost:4318", env: {} }),
      /url must be an http/,
    ],
    ["otlpTracing: url garbage", () => otlpTracing({ url: "not a url", env: {} }), /is not a URL/],
    [
      "otlpTracing: url a number",
      () => otlpTracing({ url: bad(4318), env: {} }),
      /^\[tracing-otel\] url/,
    ],
    [
      "otlpTracing: grpc protocol",
      () => otlpTracing({ env: { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" } }),
      /HTTP\/protobuf only/,
    ],
    [
      "otlpTracing: header value a number",
      () => otlpTracing({ headers: bad({ "x-key": 1 }), env: {} }),
      /header x-key must have a string value/,
    ],
    [
      "otlpTracing: bad header name",
      () => otlpTracing({ headers: { "bad name": "v" }, env: {} }),
      /not a valid HTTP header name/,
    ],
    [
      "otlpTracing: timeout 0",
      () => otlpTracing({ timeoutMillis: 0, env: {} }),
      /between 1 and 600000/,
    ],
    [
      "otlpTracing: timeout variable text",
      () => otlpTracing({ env: { OTEL_EXPORTER_OTLP_TIMEOUT: "10s" } }),
      /OTEL_EXPORTER_OTLP_TIMEOUT=10s is not a whole number/,
    ],
    [
      "otlpTracing: headers variable without =",
      () => otlpTracing({ env: { OTEL_EXPORTER_OTLP_HEADERS: "apikey" } }),
      /entry 1 of 1 has no key=value form/,
    ],
    [
      "otlpTracing: empty serviceName",
      () => otlpTracing({ serviceName: "", env: {} }),
      /serviceName must be a non-empty string/,
    ],
    [
      "otlpTracing: env a string",
      () => otlpTracing({ env: bad("production") }),
      /^\[tracing-otel\] otlpTracing: env must be an object/,
    ],
    [
      "otlpTracing: resource attribute an object",
      () => otlpTracing({ resourceAttributes: bad({ team: { name: "x" } }), env: {} }),
      /^\[tracing-otel\] otlpTracing: resourceAttributes\.team must be a string, number or boolean/,
    ],
    [
      "captureFromEnv: nothing",
      () => captureFromEnv(bad(undefined)),
      /^\[tracing-otel\] captureFromEnv\(env\)/,
    ],
    [
      "genAiSpanOf: no span",
      () => genAiSpanOf(bad(undefined), { captureContent: false }),
      /^\[tracing-otel\] genAiSpanOf\(span/,
    ],
    [
      "genAiSpanOf: captureContent missing",
      () => genAiSpanOf(bad({ kind: "run", name: "r", attributes: {} }), bad({})),
      /^\[tracing-otel\] genAiSpanOf\(span, options\): options\.captureContent/,
    ],
  ];

  for (const [name, make, message] of cases) {
    it(name, () => {
      const error = thrown(make);
      expect(error.message).toMatch(/^\[tracing-otel\] /);
      expect(error.message).toMatch(message);
    });
  }

  it("OTLP errors name the setting at fault, never a header's value", () => {
    const error = thrown(() =>
      otlpTracing({ env: { OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=%zz-secret-key" } }),
    );
    expect(OtlpConfigError.isInstance(error)).toBe(true);
    expect((error as OtlpConfigError).setting).toBe("OTEL_EXPORTER_OTLP_HEADERS");
    expect(error.message).not.toContain("secret-key");
  });

  it("otelExporter.shutdown({ deadlineMs }) rejects a deadline that is not a finite number above 0, and still shuts down after", async () => {
    const sink = otelExporter({ exporter: exporter() });
    for (const deadlineMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, bad("1000")]) {
      const error = await sink.shutdown({ deadlineMs }).catch((caught: unknown) => caught);
      expect(String((error as Error).message)).toMatch(
        /^\[tracing-otel\] otelExporter\.shutdown\(\{ deadlineMs \}\): deadlineMs must be a finite number of milliseconds above 0/,
      );
    }
    await expect(sink.shutdown({ deadlineMs: 1_000 })).resolves.toEqual({ dropped: 0 });
  });
});
