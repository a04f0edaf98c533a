import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OtlpConfigError } from "./errors.js";
import { otlpTracing } from "./otlp-tracing.js";

const setup = (env: Record<string, string>, options = {}) => {
  const otlp = otlpTracing({ env, ...options });
  void otlp.shutdown();
  return otlp;
};

describe("otlpTracing", () => {
  it("defaults to the local OTLP/HTTP port (Jaeger, a Collector)", () => {
    const otlp = setup({});
    expect(otlp.url).toBe("http://localhost:4318/v1/traces");
    expect(otlp.serviceName).toBe("loopguard");
    expect(otlp.headerNames).toEqual([]);
  });

  it("appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT and takes the traces endpoint as is", () => {
    expect(setup({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://api.honeycomb.io" }).url).toBe(
      "https://api.honeycomb.io/v1/traces",
    );
    expect(setup({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).url).toBe(
      "http://collector:4318/v1/traces",
    );
    expect(
      setup({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:9999/custom",
      }).url,
    ).toBe("http://b:9999/custom");
    expect(
      setup({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318" }, { url: "http://c:1/v1/traces" }).url,
    ).toBe("http://c:1/v1/traces");
  });

  it("reads headers (percent-decoded), the service name and resource attributes", () => {
    const otlp = setup({
      OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=abc%2Fdef, x-honeycomb-dataset=agents",
      OTEL_SERVICE_NAME: "support",
      OTEL_RESOURCE_ATTRIBUTES: "service.name=ignored,deployment.environment=prod%20eu",
    });
    expect(otlp.headerNames).toEqual(["x-honeycomb-team", "x-honeycomb-dataset"]);
    expect(otlp.serviceName).toBe("support");
    expect(otlp.resource.attributes).toMatchObject({
      "service.name": "support",
      "deployment.environment": "prod eu",
    });
    expect(setup({ OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attributes" }).serviceName).toBe(
      "from-attributes",
    );
  });

  it.each([
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" },
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      /must be an http/,
    ],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, "OTEL_EXPORTER_OTLP_ENDPOINT", /is not a URL/],
    [
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "ftp://x" },
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      /http:\/\/ or https:\/\//,
    ],
    [
      { OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team" },
      "OTEL_EXPORTER_OTLP_HEADERS",
      /no key=value form/,
    ],
    [
      { OTEL_EXPORTER_OTLP_HEADERS: "bad header=1" },
      "OTEL_EXPORTER_OTLP_HEADERS",
      /not a valid HTTP header name/,
    ],
    [
      { OTEL_EXPORTER_OTLP_HEADERS: "x-key=%E0%A4%A" },
      "OTEL_EXPORTER_OTLP_HEADERS",
      /broken percent-encoding/,
    ],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL", /HTTP\/protobuf only/],
    [{ OTEL_EXPORTER_OTLP_TIMEOUT: "10s" }, "OTEL_EXPORTER_OTLP_TIMEOUT", /whole number/],
    [{ OTEL_EXPORTER_OTLP_TIMEOUT: "0" }, "OTEL_EXPORTER_OTLP_TIMEOUT", /between 1 and 600000/],
    [{ OTEL_RESOURCE_ATTRIBUTES: "=x" }, "OTEL_RESOURCE_ATTRIBUTES", /no key=value form/],
  ])("rejects %o with a clear error", (env, setting, message) => {
    let caught: unknown;
    try {
      otlpTracing({ env });
    } catch (error) {
      caught = error;
    }
    expect(OtlpConfigError.isInstance(caught)).toBe(true);
    expect((caught as OtlpConfigError).setting).toBe(setting);
    expect((caught as Error).message).toMatch(/^\[tracing-otel\] /);
    expect((caught as Error).message).toMatch(message);
  });

  it("never puts a header value (a secret) in an error message", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{12,40}$/), (secret) => {
        for (const raw of [
          `x-honeycomb-team=${secret},broken`,
          `x-honeycomb-team=${secret}%zz`,
          `bad name=${secret}`,
        ]) {
          try {
            otlpTracing({ env: { OTEL_EXPORTER_OTLP_HEADERS: raw } });
            return false;
          } catch (error) {
            if ((error as Error).message.includes(secret)) return false;
          }
        }
        return true;
      }),
    );
  });
});
