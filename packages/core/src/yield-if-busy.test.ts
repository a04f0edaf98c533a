import { describe, expect, it } from "vitest";
import { createAgent } from "./index.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { turnSliceMs, yieldIfBusy } from "./yield-if-busy.js";

/** Keeps the thread busy until the clock has moved `ms` (however fast the machine is). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("yieldIfBusy", () => {
  it("goes on at once within a turn's slice, waits for the next turn past it", async () => {
    await nextTurn();
    await nextTurn();
    expect(yieldIfBusy()).toBeUndefined();
    spin(turnSliceMs + 5);
    const pause = yieldIfBusy();
    expect(pause).toBeInstanceOf(Promise);
    let resumed = false;
    void pause!.then(() => {
      resumed = true;
    });
    // Not within this turn's microtasks: only once the event loop has turned.
    for (let index = 0; index < 10; index += 1) await Promise.resolve();
    expect(resumed).toBe(false);
    await pause;
    expect(resumed).toBe(true);
    expect(yieldIfBusy()).toBeUndefined();
  });

  it("resumes the runs waiting for a turn oldest first", async () => {
    await nextTurn();
    yieldIfBusy();
    spin(turnSliceMs + 5);
    const order: number[] = [];
    const waits = [5, 1, 3, 2].map((runOrder) =>
      yieldIfBusy(runOrder)!.then(() => order.push(runOrder)),
    );
    await Promise.all(waits);
    expect(order).toEqual([1, 2, 3, 5]);
  });

  it("a burst of streaming runs lets timers fire between slices", async () => {
    // Each reply streams 400 deltas that are all ready at once: without slices the event loop
    // would not turn until every run had taken all of its deltas.
    const model = scriptedModel(() => ({ content: "word ".repeat(800) }), {
      copyRequests: false,
      chunkChars: 10,
    });
    const agent = createAgent({ model, tools: [], store: memoryEventStore() });
    let ticks = 0;
    const ticker = setInterval(() => {
      ticks += 1;
    }, 1);
    const started = performance.now();
    const runs = Array.from({ length: 40 }, async (_, index) => {
      const stream = agent.stream(`task ${index}`);
      for await (const _event of stream);
      return stream.result;
    });
    const results = await Promise.all(runs);
    const settledTicks = ticks;
    clearInterval(ticker);
    const elapsed = performance.now() - started;
    expect(results.every((result) => result.status === "completed")).toBe(true);
    // The batch took many slices and the 1 ms interval fired between them (a loop held until
    // the batch ends fires it at most once); a machine fast enough to finish within a few
    // slices asks less.
    expect(settledTicks).toBeGreaterThanOrEqual(
      Math.min(3, Math.floor(elapsed / (4 * turnSliceMs))),
    );
  });
});
