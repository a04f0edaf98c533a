import { createRequire } from "node:module";
import type { Attributes } from "@opentelemetry/api";
import type { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import { attachCollectorHealth, CollectorHealth } from "./collector-health.js";
import { OtlpConfigError } from "./errors.js";
import { watchedAgentFactory } from "./watched-http-agent.js";

/** Options of {@link otlpTracing}; each one wins over its `OTEL_*` variable. */
export interface OtlpTracingOptions {
  /** The full traces URL, e.g. `http://localhost:4318/v1/traces`. */
  url?: string;
  /** Request headers, e.g. `{ "x-honeycomb-team": key }`; merged over `OTEL_EXPORTER_OTLP_HEADERS`. */
  headers?: Record<string, string>;
  serviceName?: string;
  /** Resource attributes, merged over `OTEL_RESOURCE_ATTRIBUTES`. */
  resourceAttributes?: Record<string, string | number | boolean>;
  /** Milliseconds each export may take, retries included. Default `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 000. */
  timeoutMillis?: number;
  /** Where to read `OTEL_*` variables. Default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** An OTLP/HTTP protobuf trace pipeline, ready for `otelExporter({ exporter, resource })`. */
export interface OtlpTracing {
  /** The OTLP/HTTP protobuf span exporter. */
  readonly exporter: OTLPTraceExporter;
  /** The resource: `service.name` and `OTEL_RESOURCE_ATTRIBUTES`. */
  readonly resource: Resource;
  /** Where spans go. */
  readonly url: string;
  readonly serviceName: string;
  /** Names of the headers sent (values are secrets and are not kept here). */
  readonly headerNames: readonly string[];
  /** Flushes and closes the exporter; safe to call twice. */
  shutdown(): Promise<void>;
}

const defaultUrl = "http://localhost:4318/v1/traces";

/**
 * Sets up OTLP over HTTP/protobuf from the standard `OTEL_*` variables
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_EXPORTER_OTLP_TIMEOUT`), with options that win over them. A value that cannot be used
 * throws an {@link OtlpConfigError} naming the variable, never silently falls back.
 *
 * @example
 * // Jaeger: docker run -p 16686:16686 -p 4318:4318 jaegertracing/jaeger
 * // OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 OTEL_SERVICE_NAME=support-agent
 * const otlp = otlpTracing();
 * const agent = createAgent({ model, tools, redact, exporters: [otelExporter({ exporter: otlp.exporter, resource: otlp.resource })] });
 * // ... on exit: await agent.shutdown();
 */
export function otlpTracing(options: OtlpTracingOptions = {}): OtlpTracing {
  if (typeof options !== "object" || options === null)
    throw new OtlpConfigError(
      "options",
      '[tracing-otel] otlpTracing(options): options must be an object, e.g. otlpTracing({ url: "http://localhost:4318/v1/traces" })',
    );
  if (options.env !== undefined && (typeof options.env !== "object" || options.env === null))
    throw new OtlpConfigError(
      "env",
      "[tracing-otel] otlpTracing: env must be an object of variables such as process.env, or left out to read process.env",
    );
  const env = options.env ?? process.env;
  const read = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };

  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
    const protocol = read(name);
    if (protocol !== undefined) {
      if (protocol !== "http/protobuf")
        throw new OtlpConfigError(
          name,
          `[tracing-otel] ${name}=${protocol} is not supported: otlpTracing speaks OTLP over HTTP/protobuf only; set ${name}=http/protobuf or unset it`,
        );
      break;
    }
  }

  let url: string;
  if (options.url !== undefined) url = checkUrl("url", options.url);
  else if (read("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    url = checkUrl(
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      read("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")!,
    );
  else if (read("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    // The general endpoint is a base URL: the spec appends the signal's path to it.
    const base = checkUrl("OTEL_EXPORTER_OTLP_ENDPOINT", read("OTEL_EXPORTER_OTLP_ENDPOINT")!);
    url = `${base.replace(/\/+$/, "")}/v1/traces`;
  } else url = defaultUrl;

  const headers: Record<string, string> = {
    ...parsePairs("OTEL_EXPORTER_OTLP_HEADERS", read("OTEL_EXPORTER_OTLP_HEADERS")),
    ...parsePairs("OTEL_EXPORTER_OTLP_TRACES_HEADERS", read("OTEL_EXPORTER_OTLP_TRACES_HEADERS")),
  };
  if (options.headers !== undefined) {
    if (typeof options.headers !== "object" || options.headers === null)
      throw new OtlpConfigError(
        "headers",
        "[tracing-otel] otlpTracing: headers must be an object of header names to string values",
      );
    for (const [name, value] of Object.entries(options.headers)) {
      checkHeaderName("headers", name);
      if (typeof value !== "string")
        throw new OtlpConfigError(
          "headers",
          `[tracing-otel] otlpTracing: header ${name} must have a string value`,
        );
      headers[name] = value;
    }
  }

  let timeoutMillis = 10_000;
  const timeoutName = read("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
    ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
    : "OTEL_EXPORTER_OTLP_TIMEOUT";
  const rawTimeout = read(timeoutName);
  if (options.timeoutMillis !== undefined)
    timeoutMillis = checkTimeout("timeoutMillis", options.timeoutMillis);
  else if (rawTimeout !== undefined) {
    if (!/^\d+$/.test(rawTimeout))
      throw new OtlpConfigError(
        timeoutName,
        `[tracing-otel] ${timeoutName}=${rawTimeout} is not a whole number of milliseconds; set it like ${timeoutName}=10000`,
      );
    timeoutMillis = checkTimeout(timeoutName, Number(rawTimeout));
  }

  const attributes: Attributes = parsePairs(
    "OTEL_RESOURCE_ATTRIBUTES",
    read("OTEL_RESOURCE_ATTRIBUTES"),
  );
  if (options.resourceAttributes !== undefined) {
    if (typeof options.resourceAttributes !== "object" || options.resourceAttributes === null)
      throw new OtlpConfigError(
        "resourceAttributes",
        "[tracing-otel] otlpTracing: resourceAttributes must be an object of string values",
      );
    for (const [key, value] of Object.entries(options.resourceAttributes)) {
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean")
        throw new OtlpConfigError(
          "resourceAttributes",
          `[tracing-otel] otlpTracing: resourceAttributes.${key} must be a string, number or boolean, got ${value === null ? "null" : typeof value}`,
        );
      attributes[key] = value;
    }
  }
  const serviceName =
    options.serviceName ??
    read("OTEL_SERVICE_NAME") ??
    (typeof attributes["service.name"] === "string" ? attributes["service.name"] : "loopguard");
  if (typeof serviceName !== "string" || serviceName.trim() === "")
    throw new OtlpConfigError(
      "serviceName",
      "[tracing-otel] otlpTracing: serviceName must be a non-empty string",
    );
  attributes["service.name"] = serviceName;

  // The agent tells the fail-fast layer of a refused or reset connection at once (the OTLP
  // exporter retries those for its whole timeout before it answers).
  const health = new CollectorHealth();
  const exporter = new (loadOtlpExporter())({
    url,
    headers,
    timeoutMillis,
    httpAgentOptions: watchedAgentFactory(health),
  });
  attachCollectorHealth(exporter, health);
  let closing: Promise<void> | undefined;
  return {
    exporter,
    resource: resourceFromAttributes(attributes),
    url,
    serviceName,
    headerNames: Object.keys(headers),
    shutdown() {
      // A collector known down is not waited on: its pending retries are abandoned.
      closing ??= health.down
        ? Promise.resolve(health.close())
        : exporter.shutdown().finally(() => health.close());
      return closing;
    },
  };
}

function checkUrl(setting: string, value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch (error) {
    throw new OtlpConfigError(
      setting,
      `[tracing-otel] ${setting}=${JSON.stringify(value)} is not a URL; set it like http://localhost:4318 (Jaeger) or https://api.honeycomb.io`,
      { cause: error },
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new OtlpConfigError(
      setting,
      `[tracing-otel] ${setting} must be an http:// or https:// URL, not ${parsed.protocol}//...; OTLP/HTTP listens on port 4318 (http://localhost:4318)`,
    );
  }
  return parsed.toString();
}

function checkTimeout(setting: string, value: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 600_000) {
    throw new OtlpConfigError(
      setting,
      `[tracing-otel] ${setting} must be a whole number of milliseconds between 1 and 600000, got ${String(value)}`,
    );
  }
  return value;
}

const tokenPattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function checkHeaderName(setting: string, name: string): void {
  if (!tokenPattern.test(name))
    throw new OtlpConfigError(
      setting,
      `[tracing-otel] ${setting}: ${JSON.stringify(name)} is not a valid HTTP header name`,
    );
}

/**
 * Parses `key=value,key2=value2` (the W3C baggage form the OTEL_* variables use), with
 * percent-encoded values. Values are never put in error messages: they are often API keys.
 */
function parsePairs(setting: string, raw: string | undefined): Record<string, string> {
  const pairs: Record<string, string> = {};
  if (raw === undefined) return pairs;
  const entries = raw.split(",");
  entries.forEach((entry, index) => {
    if (entry.trim() === "") return;
    const equals = entry.indexOf("=");
    const position = `entry ${index + 1} of ${entries.length}`;
    if (equals <= 0)
      throw new OtlpConfigError(
        setting,
        `[tracing-otel] ${setting}: ${position} has no key=value form; write it like ${setting}=key1=value1,key2=value2`,
      );
    const key = entry.slice(0, equals).trim();
    let value: string;
    try {
      value = decodeURIComponent(entry.slice(equals + 1).trim());
    } catch (error) {
      throw new OtlpConfigError(
        setting,
        `[tracing-otel] ${setting}: the value of ${key} (${position}) has a broken percent-encoding; encode % as %25`,
        { cause: error },
      );
    }
    if (setting.endsWith("HEADERS")) checkHeaderName(setting, key);
    else if (key === "")
      throw new OtlpConfigError(setting, `[tracing-otel] ${setting}: ${position} has an empty key`);
    pairs[key] = value;
  });
  return pairs;
}

const require = createRequire(import.meta.url);

/**
 * Loads the OTLP/HTTP protobuf exporter, an optional peer dependency (only `otlpTracing`
 * needs it): a missing package is an error that says what to install.
 */
function loadOtlpExporter(): typeof OTLPTraceExporter {
  try {
    return (
      require("@opentelemetry/exporter-trace-otlp-proto") as {
        OTLPTraceExporter: typeof OTLPTraceExporter;
      }
    ).OTLPTraceExporter;
  } catch (error) {
    throw new OtlpConfigError(
      "@opentelemetry/exporter-trace-otlp-proto",
      "[tracing-otel] otlpTracing needs the OTLP exporter: install it beside this package (npm install @opentelemetry/exporter-trace-otlp-proto@0.223.1), or pass otelExporter your own SpanExporter, SpanProcessor or TracerProvider",
      { cause: error },
    );
  }
}
