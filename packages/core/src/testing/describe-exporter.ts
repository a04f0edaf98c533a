/**
 * The Exporter conformance suite. Every exporter runs it first, then its own cases.
 *
 * Like `describeEventStore`, it imports vitest lazily: call it from a vitest test file.
 */
import type { Exporter } from "../contracts/exporter.js";
import type { Span } from "../spans.js";
import { SpanBuilder } from "../spans.js";
import { loadSuite } from "./load-suite.js";

/** What `describeExporter` needs to know about an exporter under test. */
export interface ExporterSuiteOptions {
  /** The name of the `describe` block, e.g. `otelExporter`. */
  name: string;
  /** A fresh exporter. */
  create: () => Exporter | Promise<Exporter>;
  /**
   * The spans that reached the exporter's destination so far (after `forceFlush`), when the
   * test can see them: the delivery cases run only when this is given.
   */
  received?: (exporter: Exporter) => Span[] | Promise<Span[]>;
  /** An exporter whose destination is down: the fail-open cases run only when this is given. */
  createBroken?: () => Exporter | Promise<Exporter>;
}

/** A small finished run as spans: a run, a step, a model call and a refused tool call. */
export function sampleSpans(runId = "run_conformance"): Span[] {
  const builder = new SpanBuilder(runId);
  let seq = 0;
  let at = 1_700_000_000_000;
  const push = (event: Record<string, unknown>) => {
    at += 5;
    return builder.push({ ...event, seq: seq++, at } as never);
  };
  const spans: Span[] = [];
  spans.push(
    ...push({
      type: "run-start",
      runId,
      agentId: "conformance",
      task: "t",
      model: "claude-sonnet-5-5",
      maxTokens: 100,
      budget: {},
      policyDigest: "p",
      toolDigest: "t",
    }),
  );
  spans.push(
    ...push({
      type: "model-request",
      step: 1,
      maxTokens: 100,
      estimateUsd: 0.001,
      requestDigest: "d",
    }),
  );
  spans.push(
    ...push({
      type: "model-response",
      step: 1,
      response: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: [{ type: "tool_use", id: "toolu_1", name: "lookup", input: {} }],
        stop_reason: "tool_use",
        usage: { input_tokens: 10, output_tokens: 5 },
      },
      costUsd: 0.0001,
      latencyMs: 3,
      attempts: 1,
    }),
  );
  spans.push(
    ...push({
      type: "tool-call-refusal",
      step: 1,
      toolUseId: "toolu_1",
      tool: "lookup",
      decision: {
        outcome: "deny",
        passed: ["0.7:run_halted"],
        refusedAt: "2:policy",
        reason: "policy_deny",
        message: "no",
      },
      content: "Refused",
    }),
  );
  spans.push(...push({ type: "run-end", status: "completed", answer: "ok", why: "end_turn" }));
  return spans;
}

/**
 * Runs the contract's cases against an exporter: it accepts batches (empty ones too), never
 * throws into the caller, `shutdown` is safe to call twice, and with `received` every span
 * arrives once with its ids and parents.
 *
 * @example
 * await describeExporter({ name: "otelExporter", create: () => otelExporter({ exporter }) });
 */
export async function describeExporter(options: ExporterSuiteOptions): Promise<void> {
  const vitest = await loadSuite("describeExporter", options, "received, createBroken");
  const { describe, expect, it } = vitest;
  const settle = async (value: unknown): Promise<unknown> => {
    try {
      return await value;
    } catch (error) {
      return { thrown: error };
    }
  };

  describe(`${options.name} (Exporter conformance)`, () => {
    it("has a name and the required members", async () => {
      const exporter = await options.create();
      expect(typeof exporter.name).toBe("string");
      expect(exporter.name.length).toBeGreaterThan(0);
      expect(typeof exporter.export).toBe("function");
      expect(typeof exporter.shutdown).toBe("function");
      await exporter.shutdown();
    });

    it("accepts an empty batch and a batch of a whole run", async () => {
      const exporter = await options.create();
      const empty = (await settle(exporter.export([]))) as { code?: string; thrown?: unknown };
      expect(empty?.thrown).toBeUndefined();
      const result = (await settle(exporter.export(sampleSpans()))) as {
        code?: string;
        thrown?: unknown;
      };
      expect(result?.thrown).toBeUndefined();
      expect(["success", "failed"]).toContain(result.code);
      await exporter.forceFlush?.();
      await exporter.shutdown();
    });

    it("can be shut down twice, and exporting after shutdown does not throw", async () => {
      const exporter = await options.create();
      await exporter.shutdown();
      await exporter.shutdown();
      const late = (await settle(exporter.export(sampleSpans("run_late")))) as { thrown?: unknown };
      expect(late?.thrown).toBeUndefined();
    });

    if (options.received) {
      it("delivers every span once, with its trace id, span id and parent", async () => {
        const exporter = await options.create();
        const sent = sampleSpans("run_delivery");
        await exporter.export(sent);
        await exporter.forceFlush?.();
        const got = (await options.received!(exporter)).filter(
          (span) => span.traceId === sent[0]!.traceId,
        );
        expect(got.map((span) => span.spanId).sort()).toEqual(
          sent.map((span) => span.spanId).sort(),
        );
        const parents = new Map(got.map((span) => [span.spanId, span.parentSpanId]));
        for (const span of sent) expect(parents.get(span.spanId)).toBe(span.parentSpanId);
        await exporter.shutdown();
      });
    }

    if (options.createBroken) {
      it("fails open: a destination that is down gives a failed result or an error on flush, never a throw into export", async () => {
        const exporter = await options.createBroken!();
        const result = (await settle(exporter.export(sampleSpans("run_broken")))) as {
          code?: string;
          thrown?: unknown;
        };
        expect(result?.thrown).toBeUndefined();
        await settle(exporter.forceFlush?.());
        await settle(exporter.shutdown());
      });
    }
  });
}
