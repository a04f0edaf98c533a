import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { ExportQueue, exportQueueOf } from "./export-queue.js";
import { guardTool } from "./guard.js";
import type { Exporter, ExportResult, Span } from "./index.js";
import {
  createAgent,
  ExportDroppedError,
  InvalidArgumentError,
  memoryEventStore,
  shutdownExporters,
  tool,
  withRun,
} from "./index.js";
import { callUntilResult, recordingExporter } from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: ({ order_id }) => `Order ${order_id}: delivered`,
});

/** An exporter timeout longer than any test may run: a run that waited for it fails on the test timeout. */
const exporterTimeoutMs = 600_000;

/** One tool call, then an answer: three spans a run at least. */
function model() {
  return callUntilResult(
    { id: "tu_1", name: "lookup_order", input: { order_id: "A1" } },
    "Delivered.",
  );
}

/** A collector that never answers: every export and flush hangs. */
function hangingExporter(): Exporter & { calls: number } {
  const exporter = {
    name: "hanging",
    calls: 0,
    export(): Promise<ExportResult> {
      exporter.calls += 1;
      return new Promise(() => {});
    },
    forceFlush: () => new Promise<void>(() => {}),
    shutdown: () => new Promise<void>(() => {}),
  };
  return exporter;
}

/** A collector that refuses connections (until `up` is set). */
function refusingExporter(): Exporter & { calls: number; up: boolean; spans: Span[] } {
  const exporter = {
    name: "refusing",
    calls: 0,
    up: false,
    spans: [] as Span[],
    async export(spans: readonly Span[]): Promise<ExportResult> {
      exporter.calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (!exporter.up)
        throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4318"), {
          code: "ECONNREFUSED",
        });
      exporter.spans.push(...spans);
      return { code: "success" };
    },
    async shutdown() {},
  };
  return exporter;
}

/** Polls until `done` (the machine may be loaded: no fixed sleeps for what is asynchronous). */
async function until(done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

function agentQueueOpen(exporter: Exporter): boolean {
  return exportQueueOf(exporter, undefined).open;
}

describe("export never holds a run", () => {
  it("200 runs with a collector that never answers finish without waiting for it, and shutdown keeps its deadline", async () => {
    const exporter = hangingExporter();
    const errors: Array<{ error: unknown; where: string }> = [];
    const agent = createAgent({
      model: model(),
      tools: [lookup],
      exporters: [exporter],
      exportQueue: { timeoutMs: exporterTimeoutMs, maxQueuedSpans: 256 },
      onError: (error, where) => errors.push({ error, where }),
    });
    const started = performance.now();
    let slowestMs = 0;
    for (let index = 0; index < 200; index++) {
      const runStarted = performance.now();
      const result = await agent.run("Where is A1?");
      slowestMs = Math.max(slowestMs, performance.now() - runStarted);
      expect(result.status).toBe("completed");
    }
    const runsMs = performance.now() - started;
    // Without the queue each run waited for the exporter's flush (its timeout, longer than any
    // test may run): no run came near it, whatever the machine's pace.
    expect(slowestMs).toBeLessThan(exporterTimeoutMs);
    expect(runsMs).toBeLessThan(exporterTimeoutMs);
    // One send hangs; the queue filled and the rest were dropped, counted and reported.
    expect(exporter.calls).toBe(1);
    const drops = errors.filter((item) => ExportDroppedError.isInstance(item.error));
    expect(drops.length).toBeGreaterThan(0);
    expect(drops[0]!.where).toBe("exporter hanging");
    expect((drops[0]!.error as Error).message).toMatch(
      /^\[core\] exporter "hanging": dropped \d+ span\(s\) .* because its queue is full/,
    );
    const before = performance.now();
    await agent.shutdown({ deadlineMs: 300 });
    const shutdownMs = performance.now() - before;
    expect(shutdownMs).toBeGreaterThanOrEqual(250);
    expect(shutdownMs).toBeLessThan(exporterTimeoutMs);
    const last = errors.at(-1)!;
    expect(String((last.error as Error).message)).toMatch(
      /did not finish flushing within 300 ms|not sent before the shutdown deadline/,
    );
    // Safe to call twice: the second call waits for the first, nothing more.
    await agent.shutdown({ deadlineMs: 300 });
  }, 120_000);

  it("a collector that refuses opens the breaker after 3 sends; a probe that succeeds closes it", async () => {
    const exporter = refusingExporter();
    const errors: Array<{ error: unknown; where: string }> = [];
    // The breaker's clock is explicit: a loaded machine cannot make a probe due mid-test.
    let clock = 0;
    exportQueueOf(exporter, { breakAfter: 3, probeAfterMs: 100 }, () => clock);
    const agent = createAgent({
      model: model(),
      tools: [lookup],
      exporters: [exporter],
      exportQueue: { breakAfter: 3, probeAfterMs: 100 },
      onError: (error, where) => errors.push({ error, where }),
    });
    for (let index = 0; index < 50; index++)
      expect((await agent.run("Where is A1?")).status).toBe("completed");
    // Wait for the three refused sends; then nothing more goes to the collector.
    await until(() => errors.length >= 4);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(exporter.calls).toBe(3);
    expect(errors.filter((item) => /ECONNREFUSED/.test(String(item.error))).length).toBe(3);
    expect(
      errors.some((item) =>
        /failed 3 sends in a row: its spans are dropped \(counted\) until a probe succeeds/.test(
          String((item.error as Error).message),
        ),
      ),
    ).toBe(true);
    // The collector comes back; after the probe wait, the next batch is the probe.
    exporter.up = true;
    clock += 150;
    expect((await agent.run("Where is A1?")).status).toBe("completed");
    await until(() => !agentQueueOpen(exporter));
    expect(exporter.spans.length).toBeGreaterThan(0);
    const dropped = errors
      .map((item) => item.error)
      .filter((error): error is ExportDroppedError => ExportDroppedError.isInstance(error));
    expect(dropped.at(-1)!.totalDropped).toBeGreaterThan(0);
    expect(dropped.at(-1)!.message).toMatch(/because its breaker was open/);
    // Closed again: every later run's spans arrive.
    const sent = exporter.spans.length;
    await agent.run("Where is A1?");
    await until(() => exporter.spans.length > sent);
    expect(exporter.spans.length).toBeGreaterThan(sent);
    await agent.shutdown();
  });

  it("a failed probe keeps the breaker open and doubles its wait", async () => {
    let clock = 0;
    const exporter = refusingExporter();
    const queue = new ExportQueue(exporter, { breakAfter: 1, probeAfterMs: 100 }, () => clock);
    const errors: unknown[] = [];
    const span = { name: "x" } as Span;
    queue.push([span], (error) => errors.push(error));
    await until(() => queue.open);
    expect(queue.open).toBe(true);
    queue.push([span], (error) => errors.push(error));
    expect(exporter.calls).toBe(1);
    clock = 100;
    queue.push([span], (error) => errors.push(error)); // the probe, refused
    const refusals = () => errors.filter((error) => /ECONNREFUSED/.test(String(error))).length;
    await until(() => refusals() === 2);
    expect(exporter.calls).toBe(2);
    clock = 250; // under the doubled wait (100 + 200)
    queue.push([span], (error) => errors.push(error));
    expect(exporter.calls).toBe(2);
    clock = 300;
    exporter.up = true;
    queue.push([span], (error) => errors.push(error));
    await until(() => !queue.open);
    expect(queue.open).toBe(false);
    // Two batches skipped while open, two lost in refused sends (the first and the probe).
    expect(queue.dropped).toBe(4);
  });

  it("withRun's runs do not wait either; shutdownExporters sends what is queued within its deadline", async () => {
    let release: (() => void) | undefined;
    const received: Span[] = [];
    const slow: Exporter = {
      name: "slow",
      export: (spans) =>
        new Promise((resolve) => {
          release = () => {
            received.push(...spans);
            resolve({ code: "success" });
          };
        }),
      async shutdown() {},
    };
    const guarded = guardTool(lookup);
    await withRun({ agentId: "desk", exporters: [slow] }, async () => {
      await guarded({ order_id: "A1" }, { toolUseId: "tu_1" });
    });
    // The send has not been released: withRun returned without waiting for it.
    expect(received).toEqual([]);
    const flushing = shutdownExporters([slow], { deadlineMs: 2_000 });
    // Release each send as it comes: everything queued arrives before the deadline.
    const releaser = setInterval(() => release?.(), 5);
    await flushing;
    clearInterval(releaser);
    expect(received.map((span) => span.name)).toContain("invoke_agent desk");
  });

  it("shutdown returns at once once the breaker is open and reports every lost span (a count, 0 when none)", async () => {
    const exporter = refusingExporter();
    const recording = recordingExporter();
    const agent = createAgent({
      model: model(),
      tools: [lookup],
      store: memoryEventStore(),
      exporters: [exporter, recording],
      exportQueue: { timeoutMs: exporterTimeoutMs },
      onError: () => undefined,
    });
    for (let index = 0; index < 10; index++) await agent.run("Where is A1?");
    await until(() => agentQueueOpen(exporter));
    for (const deadlineMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const error = await agent.shutdown({ deadlineMs }).catch((caught: unknown) => caught);
      expect(InvalidArgumentError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(
        /^\[core\] agent\.shutdown\(\{ deadlineMs \}\): deadlineMs must be a finite number of milliseconds above 0/,
      );
    }
    // A deadline no test reaches: the open breaker, not the deadline, ends the wait.
    const report = await agent.shutdown({ deadlineMs: exporterTimeoutMs });
    expect(recording.spans.length).toBeGreaterThan(0);
    expect(report.exporters).toEqual([
      { name: "refusing", dropped: recording.spans.length, finished: true },
      { name: "recording", dropped: 0, finished: true },
    ]);
    expect(report.dropped).toBe(recording.spans.length);
    expect(exporter.spans).toEqual([]);
  });

  it("refuses bad queue settings with the option's name", () => {
    expect(() =>
      createAgent({ model: model(), tools: [], exportQueue: { breakAfter: 0 } }),
    ).toThrow(/\[core\] createAgent: exportQueue\.breakAfter must be a positive integer, got 0/);
    expect(() => createAgent({ model: model(), tools: [], shutdownDeadlineMs: -1 })).toThrow(
      /\[core\] createAgent: shutdownDeadlineMs must be a non-negative integer/,
    );
  });
});
