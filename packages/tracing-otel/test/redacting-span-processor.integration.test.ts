import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createRedactor } from "@loopguard/redact";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import { OtlpConfigError, redactingSpanProcessor } from "../src/index.js";
import { type OtlpReceiver, startOtlpReceiver } from "./otlp-receiver.js";

const email = "jane.doe@example.com";
const card = "4111 1111 1111 1111";
const apiKey = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  trace.disable();
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(): Promise<OtlpReceiver> {
  const started = await startOtlpReceiver();
  receivers.push(started);
  return started;
}

/** Every secret of these tests, as the receiver's raw bytes would carry it. */
function leaks(bytes: Buffer): string[] {
  return [email, card, card.replace(/ /g, ""), apiKey, "jane.doe"].filter((value) =>
    bytes.includes(value),
  );
}

/** A provider like an app's own: a real BatchSpanProcessor and OTLP/HTTP protobuf exporter. */
function appProvider(url: string, wrap: (next: SpanProcessor) => SpanProcessor) {
  return new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": "checkout" }),
    spanProcessors: [
      wrap(new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 50 })),
    ],
  });
}

describe("redactingSpanProcessor in an app's own OpenTelemetry setup, over real OTLP protobuf", () => {
  it("redacts names, attributes, events, links and the status message before the batch processor sees them; ids, times and numbers pass", async () => {
    const collector = await receiver();
    const provider = appProvider(collector.tracesUrl, (next) =>
      redactingSpanProcessor(next, { redactor: createRedactor() }),
    );
    const tracer = provider.getTracer("checkout");
    const linked = tracer.startSpan("upstream");
    linked.end();
    const span = tracer.startSpan(`charge ${email}`, {
      attributes: {
        "customer.card": card,
        "http.request.header.authorization": `Bearer ${apiKey}`,
      },
      links: [{ context: linked.spanContext(), attributes: { "link.note": `from ${email}` } }],
    });
    span.setAttribute("amount_usd", 89.99);
    span.setAttribute("retried", true);
    span.setAttribute("recipients", [email, "ops"]);
    span.addEvent(`receipt to ${email}`, { to: email, attempt: 2 });
    span.recordException(new Error(`card ${card} declined for ${email}`));
    span.setStatus({ code: SpanStatusCode.ERROR, message: `declined: ${email}` });
    span.end();
    await provider.forceFlush();
    const spans = await collector.waitForSpans(2);
    await provider.shutdown();

    expect(leaks(collector.rawBytes())).toEqual([]);
    const sent = spans.find((item) => item.spanId === span.spanContext().spanId)!;
    expect(sent.traceId).toBe(span.spanContext().traceId);
    expect(sent.name).toMatch(/^charge \S+$/);
    expect(sent.name).not.toContain("@");
    expect(sent.attributes.amount_usd).toBe(89.99);
    expect(sent.attributes.retried).toBe(true);
    expect(String(sent.attributes["customer.card"])).not.toMatch(/\d{4}/);
    expect(sent.attributes.recipients).toHaveLength(2);
    expect((sent.attributes.recipients as string[])[1]).toBe("ops");
    expect(sent.events.map((event) => event.name)).toEqual([
      expect.stringMatching(/^receipt to \S+$/),
      "exception",
    ]);
    expect(sent.events[0]!.attributes.attempt).toBe(2);
    expect(String(sent.events[1]!.attributes["exception.message"])).toMatch(/^card \S+.* declined/);
    expect(sent.links).toHaveLength(1);
    expect(sent.links[0]!.spanId).toBe(linked.spanContext().spanId);
    expect(String(sent.links[0]!.attributes["link.note"])).toMatch(/^from /);
    expect(sent.status.code).toBe(2);
    expect(sent.status.message).toMatch(/^declined: /);
    expect(sent.startTimeUnixNano).toBeGreaterThan(0n);
    expect(sent.resource["service.name"]).toBe("checkout");
  });

  it("the README's existing-NodeTracerProvider setup, run as written: the default redactor loads by itself", async () => {
    const collector = await receiver();
    const readme = readFileSync(join(import.meta.dirname, "..", "README.md"), "utf8");
    const fixture = readFileSync(
      join(import.meta.dirname, "..", "src", "__fixtures__", "existing-provider.ts"),
      "utf8",
    );
    const section = readme.slice(readme.indexOf("## Redacting an existing OpenTelemetry setup"));
    expect(/```ts fragment\n([\s\S]*?)```/.exec(section)?.[1]?.trim()).toBe(fixture.trim());
    const saved = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = collector.tracesUrl;
    try {
      // The fixture ends its span before the default redactor has loaded; the span is held,
      // then redacted, never sent as it was.
      await import("../src/__fixtures__/existing-provider.js");
    } finally {
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = saved;
    }
    const [span] = await collector.waitForSpans(1);
    expect(leaks(collector.rawBytes())).toEqual([]);
    expect(span!.name).toMatch(/^charge \S+$/);
    expect(span!.attributes.amount_usd).toBe(89.99);
    expect(span!.events[0]!.name).toBe("receipt sent");
    expect(span!.events[0]!.attributes.to).not.toBe(email);
  });

  it("fails closed: a redactor that throws, or returns what a span cannot carry, sends the span with no strings and says so", async () => {
    for (const redactor of [
      () => {
        throw new Error("detector crashed");
      },
      (value: unknown) => (typeof value === "string" ? { text: value } : value),
    ]) {
      const memory = new InMemorySpanExporter();
      const errors: string[] = [];
      const provider = new NodeTracerProvider({
        spanProcessors: [
          redactingSpanProcessor(new SimpleSpanProcessor(memory), {
            redactor,
            onError: (error, where) => errors.push(`${where}: ${String(error)}`),
          }),
        ],
      });
      const span = provider.getTracer("t").startSpan(`charge ${email}`, {
        attributes: { card, amount: 5, tags: [email] },
      });
      span.addEvent("sent", { to: email, attempt: 1 });
      span.setStatus({ code: SpanStatusCode.ERROR, message: email });
      span.end();
      await provider.forceFlush();
      const [sent] = memory.getFinishedSpans() as ReadableSpan[];
      expect(sent!.name).toBe("[redaction failed]");
      expect(sent!.attributes).toEqual({ amount: 5 });
      expect(sent!.events[0]).toMatchObject({
        name: "[redaction failed]",
        attributes: { attempt: 1 },
      });
      expect(sent!.status).toEqual({ code: SpanStatusCode.ERROR });
      expect(sent!.spanContext().spanId).toBe(span.spanContext().spanId);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/^redactor on span [0-9a-f]{16}: /);
      await provider.shutdown();
    }
  });

  it("never calls next.onStart with the live span, and passes forceFlush and shutdown on", async () => {
    const calls: string[] = [];
    const next: SpanProcessor = {
      onStart: () => calls.push("onStart"),
      onEnd: (span) => calls.push(`onEnd ${span.name}`),
      forceFlush: async () => {
        calls.push("forceFlush");
      },
      shutdown: async () => {
        calls.push("shutdown");
      },
    };
    const provider = new NodeTracerProvider({
      spanProcessors: [redactingSpanProcessor(next, { redactor: (value) => value })],
    });
    provider.getTracer("t").startSpan("a").end();
    await provider.forceFlush();
    await provider.shutdown();
    expect(calls).toEqual(["onEnd a", "forceFlush", "shutdown"]);
  });

  it("refuses bad arguments at set-up, naming what to pass", () => {
    expect(() => redactingSpanProcessor({} as SpanProcessor)).toThrow(
      /\[tracing-otel\] redactingSpanProcessor\(next, options\): next must be a SpanProcessor/,
    );
    const next = new SimpleSpanProcessor(new InMemorySpanExporter());
    expect(() =>
      redactingSpanProcessor(next, { redactor: "on" as unknown as (value: unknown) => unknown }),
    ).toThrow(/options.redactor must be a function, got string/);
    expect(OtlpConfigError.isInstance(new OtlpConfigError("redactor", "x"))).toBe(true);
  });

  // An app that installed this package but not @loopguard/redact (an optional peer): the
  // built package, in a folder of its own with its other peers and without redact.
  it.skipIf(!existsSync(join(import.meta.dirname, "..", "dist", "index.js")))(
    "without a redactor and without @loopguard/redact installed, fails at set-up naming both fixes",
    () => {
      const app = mkdtempSync(join(tmpdir(), "loopguard-no-redact-"));
      try {
        const here = join(import.meta.dirname, "..");
        const own = join(app, "node_modules", "@loopguard", "tracing-otel");
        mkdirSync(own, { recursive: true });
        cpSync(join(here, "dist"), join(own, "dist"), { recursive: true });
        cpSync(join(here, "package.json"), join(own, "package.json"));
        for (const peer of [
          "@loopguard/core",
          "@opentelemetry/api",
          "@opentelemetry/resources",
          "@opentelemetry/sdk-trace-base",
        ]) {
          const target = join(app, "node_modules", peer);
          mkdirSync(dirname(target), { recursive: true });
          symlinkSync(realpathSync(join(here, "node_modules", peer)), target);
        }
        writeFileSync(
          join(app, "main.mjs"),
          `import { redactingSpanProcessor } from "@loopguard/tracing-otel";
const next = { onStart() {}, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} };
try { redactingSpanProcessor(next); console.log("no error"); }
catch (error) { console.log(error.constructor.name, error.setting, error.message); }
console.log("with a redactor:", typeof redactingSpanProcessor(next, { redactor: (v) => v }).onEnd);
`,
        );
        // A plain environment: the test runner's NODE_PATH / NODE_OPTIONS would find the
        // workspace's copy.
        const result = spawnSync(process.execPath, [join(app, "main.mjs")], {
          cwd: app,
          encoding: "utf8",
          env: { PATH: process.env.PATH ?? "" },
        });
        expect(result.stderr).toBe("");
        expect(result.stdout).toMatch(
          /^OtlpConfigError redactor \[tracing-otel\] redactingSpanProcessor: no redactor given and @loopguard\/redact is not installed; install it \(pnpm add @loopguard\/redact\).*or pass \{ redactor/m,
        );
        expect(result.stdout).toContain("with a redactor: function");
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
  );
});
