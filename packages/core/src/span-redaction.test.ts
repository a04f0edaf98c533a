import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent, type Span, tool } from "./index.js";
import { recordingExporter, scriptedModel } from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order by id.",
  input: v.object({ order_id: v.string() }),
  run: async ({ order_id }) => `order ${order_id} for jane@customer.example`,
});

const script = () =>
  scriptedModel([
    {
      content: [
        { type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1" } },
      ],
    },
    { content: "Done for jane@customer.example." },
  ]);

async function exported(redact: ((value: unknown) => unknown) | false): Promise<Span[]> {
  const exporter = recordingExporter();
  const now = () => 1_764_650_000_000;
  await createAgent({ model: script(), tools: [lookup], exporters: [exporter], redact, now }).run(
    "Check order A1",
    { runId: "run_span_redaction" },
  );
  return exporter.spans;
}

/** Attributes without the measured times, which differ between two runs. */
const untimed = (attributes: Span["attributes"]) =>
  Object.fromEntries(
    Object.entries(attributes).filter(([key]) => !/latency|first_chunk|duration/.test(key)),
  );

describe("span redaction", () => {
  it("redacts what a span carries from the run, and hands the redactor no ids or times", async () => {
    const seen: unknown[] = [];
    const redact = (value: unknown) => {
      seen.push(value);
      return JSON.parse(JSON.stringify(value).replaceAll("jane@customer.example", "[EMAIL]"));
    };
    const plain = await exported(false);
    const redacted = await exported(redact);
    expect(redacted.length).toBe(plain.length);
    expect(seen.length).toBe(plain.length);
    for (const value of seen) {
      const keys = Object.keys(value as object);
      for (const structural of ["traceId", "spanId", "parentSpanId", "startTime", "endTime"])
        expect(keys).not.toContain(structural);
      for (const event of (value as { events: object[] }).events)
        expect(Object.keys(event)).not.toContain("time");
    }
    // Same spans, same ids, times, kinds and statuses; only what the run wrote is redacted.
    const byId = new Map(redacted.map((span) => [span.spanId, span]));
    for (const span of plain) {
      const twin = byId.get(span.spanId)!;
      expect(twin).toBeDefined();
      const { attributes, events, content, name, statusMessage, ...structure } = span;
      const {
        attributes: redactedAttributes,
        events: redactedEvents,
        content: redactedContent,
        name: redactedName,
        statusMessage: redactedMessage,
        ...redactedStructure
      } = twin;
      expect(redactedStructure).toEqual(structure);
      expect(redactedName).toBe(name);
      expect(redactedMessage).toBe(statusMessage);
      expect(untimed(redactedAttributes)).toEqual(untimed(attributes));
      expect(redactedEvents.map((event) => event.time)).toEqual(events.map((event) => event.time));
      expect(JSON.stringify(redactedContent ?? null)).not.toContain("jane@customer.example");
      expect(JSON.stringify(content ?? null)).toBe(
        JSON.stringify(redactedContent ?? null).replaceAll("[EMAIL]", "jane@customer.example"),
      );
    }
    expect(JSON.stringify(plain)).toContain("jane@customer.example");
  });

  it("sends a span without content or string attributes when the redactor throws or returns garbage", async () => {
    for (const redact of [
      () => {
        throw new Error("redactor down");
      },
      () => "not a span",
    ]) {
      const spans = await exported(redact);
      expect(spans.length).toBeGreaterThan(0);
      for (const span of spans) {
        expect(JSON.stringify(span)).not.toContain("jane@customer.example");
        expect(Object.values(span.attributes).some((value) => typeof value === "string")).toBe(
          false,
        );
        expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      }
    }
  });
});
