import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent, memoryEventStore, tool } from "./index.js";
import { recordingExporter, scriptedModel } from "./testing/index.js";

/** A tool that waits until the test lets it finish, counting how many run at once. */
function heldTool() {
  const state = { running: 0, peak: 0, order: [] as string[], releases: [] as Array<() => void> };
  const held = tool({
    name: "work",
    description: "Does work until released.",
    input: v.object({ label: v.string() }),
    run: ({ label }) =>
      new Promise<string>((resolve) => {
        state.running += 1;
        state.peak = Math.max(state.peak, state.running);
        state.order.push(label);
        state.releases.push(() => {
          state.running -= 1;
          resolve(`done ${label}`);
        });
      }),
  });
  return { held, state };
}

const model = () =>
  scriptedModel((request) => {
    const task = String((request.messages[0] as { content: unknown }).content);
    return request.messages.length < 2
      ? { content: [{ type: "tool_use", id: "tu_1", name: "work", input: { label: task } }] }
      : { content: `finished ${task}` };
  });

/** Waits until `done` holds (microtasks and timers of the loop; no wall-clock bound). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe("createAgent({ maxConcurrentRuns }): admission control", () => {
  it("advances at most the limit at once; the rest wait, higher priority first, then first come first served, and report their wait", async () => {
    const { held, state } = heldTool();
    const store = memoryEventStore();
    const recording = recordingExporter();
    const agent = createAgent({
      model: model(),
      tools: [held],
      store,
      exporters: [recording],
      maxConcurrentRuns: 2,
    });
    const runs = [
      agent.run("a"),
      agent.run("b"),
      agent.run("c"),
      agent.run("d", { priority: 5 }),
      agent.run("e"),
    ];
    await until(() => state.running === 2);
    expect(state.order).toEqual(["a", "b"]);
    // Let time pass while c, d and e wait, so their wait is measurable.
    await new Promise((resolve) => setTimeout(resolve, 20));
    let finished = false;
    const all = Promise.all(runs).then((results) => {
      finished = true;
      return results;
    });
    // Finish the tool calls one at a time, in the order they started.
    while (!finished) {
      await until(() => state.releases.length > 0 || finished);
      state.releases.shift()?.();
    }
    const results = await all;
    expect(results.map((result) => result.status)).toEqual(Array(5).fill("completed"));
    expect(state.peak).toBe(2);
    expect(state.order).toEqual(["a", "b", "d", "c", "e"]);
    expect(results[0]!.queueWaitMs).toBe(0);
    for (const index of [2, 3, 4]) expect(results[index]!.queueWaitMs).toBeGreaterThan(0);
    // The wait is in the log's run-start and on the run span.
    const start = (await store.read(results[3]!.runId))[0]!;
    expect(start).toMatchObject({ type: "run-start", queueWaitMs: results[3]!.queueWaitMs });
    expect((await store.read(results[0]!.runId))[0]).not.toHaveProperty("queueWaitMs");
    await agent.shutdown();
    const runSpan = recording.spans.find(
      (span) => span.kind === "run" && span.traceId && span.attributes["loopguard.queue_wait_ms"],
    );
    expect(runSpan?.attributes["loopguard.queue_wait_ms"]).toBeGreaterThan(0);
  });

  it("a run cancelled while it waits ends stopped (cancelled) before anything ran, leaving no log", async () => {
    const { held, state } = heldTool();
    const store = memoryEventStore();
    const agent = createAgent({ model: model(), tools: [held], store, maxConcurrentRuns: 1 });
    const first = agent.run("a");
    await until(() => state.running === 1);
    const controller = new AbortController();
    const waiting = agent.run("b", { runId: "run_waiting", signal: controller.signal });
    controller.abort();
    const cancelled = await waiting;
    expect(cancelled).toMatchObject({
      runId: "run_waiting",
      status: "stopped",
      why: "cancelled",
      steps: 0,
    });
    expect(cancelled.error).toMatch(
      /^\[core\] run run_waiting was cancelled while it waited \d+ ms for one of the agent's 1 run slots/,
    );
    expect(await store.read("run_waiting")).toEqual([]);
    state.releases.shift()!();
    expect((await first).status).toBe("completed");
  });

  it("refuses a maxConcurrentRuns that is not a positive integer and a bad priority, with [core] errors", async () => {
    for (const bad of [0, -2, 1.5, Number.POSITIVE_INFINITY, "4"])
      expect(() =>
        createAgent({
          model: model(),
          tools: [],
          store: memoryEventStore(),
          maxConcurrentRuns: bad as number,
        }),
      ).toThrow(/^\[core\] createAgent: maxConcurrentRuns must be a positive integer/);
    const agent = createAgent({ model: model(), tools: [], store: memoryEventStore() });
    await expect(agent.run("x", { priority: 1.5 })).rejects.toThrow(
      /^\[core\] agent\.run\(task, \{ priority \}\): priority must be an integer/,
    );
  });
});
