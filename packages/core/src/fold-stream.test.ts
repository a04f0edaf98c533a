import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { foldRun } from "./fold.js";
import { foldLog } from "./fold-stream.js";
import type { EventStore, ModelRequest, StoredEvent } from "./index.js";
import { createAgent, tool } from "./index.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: ({ order_id }) => `Order ${order_id}: delivered`,
});

/** Calls the tool `steps` times, then answers. */
function model(steps: number) {
  return scriptedModel((request: ModelRequest) => {
    const calls = request.messages.filter((message) => message.role === "assistant").length;
    return calls < steps
      ? {
          content: [
            {
              type: "tool_use",
              id: `tu_${calls}`,
              name: "lookup_order",
              input: { order_id: `A${calls}` },
            },
          ],
        }
      : { content: "All delivered." };
  });
}

/** A store that also reads in batches of `size`, counting how it was read. */
function batchingStore(inner: EventStore, size: number) {
  const counts = { read: 0, batches: 0 };
  const store: EventStore = {
    name: inner.name,
    append: (runId, events, options) => inner.append(runId, events, options),
    read: (runId) => {
      counts.read += 1;
      return inner.read(runId);
    },
    list: (filter) => inner.list(filter),
    async *readBatches(runId) {
      const events = await inner.read(runId);
      for (let start = 0; start < events.length; start += size) {
        counts.batches += 1;
        yield events.slice(start, start + size);
      }
    },
  };
  return { store, counts };
}

describe("resume streams the log", () => {
  it("folding from readBatches gives the fold of the whole log, and resume uses it instead of read", async () => {
    const inner = memoryEventStore();
    const { store, counts } = batchingStore(inner, 7);
    const agent = createAgent({ model: model(30), tools: [lookup], store });
    const first = await agent.run("Check thirty orders", { runId: "run_stream" });
    expect(first.status).toBe("completed");
    const events = await inner.read("run_stream");
    const whole = foldRun(events, "the log");
    const folded = (await foldLog(store, "run_stream", "the log", {}))!;
    expect(folded.events).toBe(events.length);
    expect(folded.fold.messages).toEqual(whole.messages);
    expect(folded.fold.status).toBe(whole.status);
    expect(folded.fold.chainDigest).toBe(whole.chainDigest);
    expect(counts.batches).toBe(Math.ceil(events.length / 7));
    // Resuming a finished run reads the log (in batches) and changes nothing.
    counts.read = 0;
    counts.batches = 0;
    const again = await agent.resume("run_stream");
    expect(again.status).toBe("completed");
    expect(again.answer).toBe(first.answer);
    expect(counts.batches).toBeGreaterThan(1);
    expect(counts.read).toBe(0);
  });

  it("an unknown run folds to nothing from either path", async () => {
    const inner = memoryEventStore();
    expect(await foldLog(inner, "run_none", "the log", {})).toBeUndefined();
    expect(await foldLog(batchingStore(inner, 5).store, "run_none", "the log", {})).toBeUndefined();
  });

  it("a long fold gives the event loop turns (a timer set before it fires before it ends)", async () => {
    const count = 300_000;
    const log: StoredEvent[] = [
      {
        type: "run-start",
        runId: "run_long",
        agentId: "a",
        task: "t",
        model: "claude-sonnet-5-5",
        maxTokens: 1,
        budget: {},
        policyDigest: "p",
        toolDigest: "t",
        seq: 0,
        at: 1,
      } as StoredEvent,
    ];
    for (let seq = 1; seq < count; seq += 1)
      log.push({
        type: "model-retry",
        step: 1,
        attempt: seq,
        kind: "overloaded",
        waitMs: 1,
        message: "overloaded",
        seq,
        at: 2,
      } as unknown as StoredEvent);
    const store: EventStore = {
      name: "fixed",
      append: async () => ({ nextSeq: count }),
      read: async () => log,
      list: async () => [],
    };
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 1);
    const folded = await foldLog(store, "run_long", "the log", {});
    clearInterval(timer);
    expect(folded!.events).toBe(count);
    // 300,000 events take far longer than one 10 ms slice anywhere: timers ran inside the fold.
    expect(ticks).toBeGreaterThan(0);
  });
});
