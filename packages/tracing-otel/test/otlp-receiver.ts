/**
 * A loopback OTLP/HTTP trace receiver for tests: what a Collector or Jaeger does with a
 * request, decoded with the code generated from the official OTLP proto definitions (shipped
 * by @opentelemetry/otlp-transformer 0.216.0), so a test sees exactly what a real backend would.
 * Accepts `application/x-protobuf` and `application/json` (OTLP/JSON), gzip or not.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

const require = createRequire(import.meta.url);
// The generated static module (pbjs -t static-module) of the OTLP protos.
const generated = require("otlp-transformer-protos/build/src/generated/root.js") as {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: { ExportTraceServiceRequest: ProtoType; ExportTraceServiceResponse: ProtoType };
        };
      };
    };
  };
};
const traceService = generated.opentelemetry.proto.collector.trace.v1;

interface ProtoType {
  decode(bytes: Uint8Array): unknown;
  encode(message: unknown): { finish(): Uint8Array };
  create(properties?: unknown): unknown;
}

/** An attribute value, flattened to plain JavaScript. */
export type FlatValue =
  | string
  | number
  | boolean
  | FlatValue[]
  | { [key: string]: FlatValue }
  | null;

/** One span as received. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP kind: 1 INTERNAL, 2 SERVER, 3 CLIENT, 4 PRODUCER, 5 CONSUMER. */
  kind: number;
  /** Nanoseconds since the epoch, as bigint. */
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Record<string, FlatValue>;
  events: Array<{ name: string; timeUnixNano: bigint; attributes: Record<string, FlatValue> }>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, FlatValue> }>;
  /** OTLP status: 0 UNSET, 1 OK, 2 ERROR. */
  status: { code: number; message: string };
  resource: Record<string, FlatValue>;
  scope: string;
}

/** One HTTP request the receiver got. */
export interface ReceivedRequest {
  path: string;
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body as sent (before gunzip). */
  raw: Buffer;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string;
  /** `http://127.0.0.1:PORT/v1/traces`. */
  readonly tracesUrl: string;
  readonly requests: ReceivedRequest[];
  readonly spans: ReceivedSpan[];
  /** Spans whose name is `name`. */
  spansNamed(name: string): ReceivedSpan[];
  /** Every body received, concatenated (to search for leaked bytes). */
  rawBytes(): Buffer;
  /** Waits until at least `count` spans arrived (or throws after `timeoutMs`). */
  waitForSpans(count: number, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1, on a free port. */
export async function startOtlpReceiver(options: { status?: number } = {}): Promise<OtlpReceiver> {
  const requests: ReceivedRequest[] = [];
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((request, response) => {
    void handle(request).then(
      ({ status, body, contentType }) => {
        response.writeHead(status, { "content-type": contentType });
        response.end(body);
      },
      (error: unknown) => {
        response.writeHead(400, { "content-type": "text/plain" });
        response.end(String((error as Error)?.message ?? error));
      },
    );
  });

  async function handle(
    request: IncomingMessage,
  ): Promise<{ status: number; body: Uint8Array | string; contentType: string }> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const contentType = String(request.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim();
    requests.push({ path: request.url ?? "", contentType, headers: request.headers, raw });
    if (request.method !== "POST" || request.url !== "/v1/traces")
      return { status: 404, body: "not found", contentType: "text/plain" };
    if (options.status && options.status !== 200)
      return { status: options.status, body: "refused by test", contentType: "text/plain" };
    const body = request.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
    if (contentType === "application/x-protobuf") {
      const message = traceService.ExportTraceServiceRequest.decode(body);
      spans.push(...flattenRequest(message as ProtoRequest, "protobuf"));
      for (const wake of waiters) wake();
      return {
        status: 200,
        body: traceService.ExportTraceServiceResponse.encode(
          traceService.ExportTraceServiceResponse.create({}),
        ).finish(),
        contentType: "application/x-protobuf",
      };
    }
    if (contentType === "application/json") {
      spans.push(...flattenRequest(JSON.parse(body.toString("utf8")) as ProtoRequest, "json"));
      for (const wake of waiters) wake();
      return { status: 200, body: "{}", contentType: "application/json" };
    }
    return {
      status: 415,
      body: `unsupported content-type ${contentType}`,
      contentType: "text/plain",
    };
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    tracesUrl: `${origin}/v1/traces`,
    requests,
    spans,
    spansNamed: (name) => spans.filter((span) => span.name === name),
    rawBytes: () => Buffer.concat(requests.map((request) => request.raw)),
    waitForSpans(count, timeoutMs = 5_000) {
      if (spans.length >= count) return Promise.resolve(spans);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(
            new Error(
              `otlp receiver: ${spans.length} span(s) arrived, expected ${count} within ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        const wake = () => {
          if (spans.length < count) return;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(spans);
        };
        waiters.add(wake);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// The decoded shapes: protobufjs gives camelCase fields, bytes as Uint8Array and 64-bit
// integers as Long (or number); OTLP/JSON gives hex strings and decimal strings.
interface ProtoAnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: unknown;
  doubleValue?: number | null;
  arrayValue?: { values?: ProtoAnyValue[] | null } | null;
  kvlistValue?: { values?: ProtoKeyValue[] | null } | null;
  bytesValue?: Uint8Array | string | null;
}
interface ProtoKeyValue {
  key: string;
  value?: ProtoAnyValue | null;
}
interface ProtoSpan {
  traceId: Uint8Array | string;
  spanId: Uint8Array | string;
  parentSpanId?: Uint8Array | string | null;
  name: string;
  kind?: number | string | null;
  startTimeUnixNano: unknown;
  endTimeUnixNano: unknown;
  attributes?: ProtoKeyValue[] | null;
  events?: Array<{
    name: string;
    timeUnixNano: unknown;
    attributes?: ProtoKeyValue[] | null;
  }> | null;
  links?: Array<{
    traceId: Uint8Array | string;
    spanId: Uint8Array | string;
    attributes?: ProtoKeyValue[] | null;
  }> | null;
  status?: { code?: number | string | null; message?: string | null } | null;
}
interface ProtoRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: ProtoKeyValue[] | null } | null;
    scopeSpans?: Array<{
      scope?: { name?: string | null } | null;
      spans?: ProtoSpan[] | null;
    }> | null;
  }> | null;
}

const kinds: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const statuses: Record<string, number> = {
  STATUS_CODE_UNSET: 0,
  STATUS_CODE_OK: 1,
  STATUS_CODE_ERROR: 2,
};

function flattenRequest(request: ProtoRequest, format: "protobuf" | "json"): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = flattenAttributes(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        out.push({
          traceId: idOf(span.traceId, format),
          spanId: idOf(span.spanId, format),
          parentSpanId: span.parentSpanId ? idOf(span.parentSpanId, format) : "",
          name: span.name,
          kind: typeof span.kind === "string" ? (kinds[span.kind] ?? 0) : (span.kind ?? 0),
          startTimeUnixNano: bigintOf(span.startTimeUnixNano),
          endTimeUnixNano: bigintOf(span.endTimeUnixNano),
          attributes: flattenAttributes(span.attributes),
          events: (span.events ?? []).map((event) => ({
            name: event.name,
            timeUnixNano: bigintOf(event.timeUnixNano),
            attributes: flattenAttributes(event.attributes),
          })),
          links: (span.links ?? []).map((link) => ({
            traceId: idOf(link.traceId, format),
            spanId: idOf(link.spanId, format),
            attributes: flattenAttributes(link.attributes),
          })),
          status: {
            code:
              typeof span.status?.code === "string"
                ? (statuses[span.status.code] ?? 0)
                : (span.status?.code ?? 0),
            message: span.status?.message ?? "",
          },
          resource,
          scope: scopeSpans.scope?.name ?? "",
        });
      }
    }
  }
  return out;
}

function idOf(value: Uint8Array | string, format: "protobuf" | "json"): string {
  if (typeof value === "string")
    return format === "json" ? value.toLowerCase() : Buffer.from(value, "base64").toString("hex");
  return Buffer.from(value).toString("hex");
}

function bigintOf(value: unknown): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" || typeof value === "string") return BigInt(value);
  if (value && typeof value === "object" && "low" in value && "high" in value) {
    const long = value as { low: number; high: number };
    return (BigInt(long.high >>> 0) << 32n) | BigInt(long.low >>> 0);
  }
  return 0n;
}

function flattenAttributes(
  attributes: ProtoKeyValue[] | null | undefined,
): Record<string, FlatValue> {
  const flat: Record<string, FlatValue> = {};
  for (const attribute of attributes ?? []) flat[attribute.key] = flattenValue(attribute.value);
  return flat;
}

function flattenValue(value: ProtoAnyValue | null | undefined): FlatValue {
  if (!value) return null;
  if (value.stringValue !== undefined && value.stringValue !== null) return value.stringValue;
  if (value.boolValue !== undefined && value.boolValue !== null) return value.boolValue;
  if (value.intValue !== undefined && value.intValue !== null)
    return Number(bigintOf(value.intValue));
  if (value.doubleValue !== undefined && value.doubleValue !== null) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(flattenValue);
  if (value.kvlistValue) return flattenAttributes(value.kvlistValue.values);
  if (value.bytesValue)
    return typeof value.bytesValue === "string"
      ? value.bytesValue
      : Buffer.from(value.bytesValue).toString("base64");
  return null;
}
