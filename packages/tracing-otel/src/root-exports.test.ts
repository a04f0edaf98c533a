import { describe, expect, it } from "vitest";
import * as root from "./index.js";
import * as internal from "./internal/index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change, or put it behind `@loopguard/tracing-otel/internal`.
describe("@loopguard/tracing-otel's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "GenAi",
      "GenAiOperation",
      "OtlpConfigError",
      "TraceExportError",
      "loopguardIdGenerator",
      "otelExporter",
      "otlpJsonOf",
      "otlpTracing",
      "redactingSpanProcessor",
    ]);
  });

  it("keep the span mapping behind ./internal", () => {
    expect(Object.keys(internal).sort()).toEqual([
      "anthropicProvider",
      "captureContentEnv",
      "captureFromEnv",
      "genAiSpanOf",
      "partsOf",
    ]);
  });
});
