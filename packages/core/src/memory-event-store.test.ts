import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  createAgent,
  InvalidArgumentError,
  memoryEventStore,
  RunLogDroppedError,
  tool,
  VolatileStoreError,
} from "./index.js";
import { scriptedModel } from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: async ({ order_id }) => ({ order_id, status: "delivered" }),
});

const askAll = {
  name: "ask_all",
  step: "2" as const,
  check: () => ({ type: "ask" as const, reason: "review", message: "A person must approve." }),
};

/** A model that calls the lookup once, then answers. */
const twoStepModel = () =>
  scriptedModel((request) =>
    request.messages.length < 2
      ? {
          content: [
            { type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1" } },
          ],
        }
      : { content: "Delivered." },
  );

afterEach(() => {
  vi.restoreAllMocks();
});

describe("createAgent without a store", () => {
  it("says once per process on console.warn that runs will not survive a restart", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    createAgent({ model: twoStepModel(), tools: [lookup] });
    createAgent({ model: twoStepModel(), tools: [lookup] });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(
      /^\[core\] createAgent: no store given.*restart/,
    );
  });

  it("says it through onError when there is one (once per agent), and nothing with a store", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const seen: [unknown, string][] = [];
    createAgent({ model: twoStepModel(), tools: [lookup], onError: (e, w) => seen.push([e, w]) });
    expect(seen).toHaveLength(1);
    expect(VolatileStoreError.isInstance(seen[0]![0])).toBe(true);
    expect((seen[0]![0] as VolatileStoreError).code).toBe("volatile_store");
    expect(seen[0]![1]).toBe("createAgent store");
    createAgent({
      model: twoStepModel(),
      tools: [lookup],
      store: memoryEventStore(),
      onError: (e, w) => seen.push([e, w]),
    });
    expect(seen).toHaveLength(1);
    expect(warn).not.toHaveBeenCalled();
  });
});

describe("memoryEventStore({ maxFinishedRuns })", () => {
  it("keeps the last N finished logs and every unfinished one; older finished logs are dropped", async () => {
    const store = memoryEventStore({ maxFinishedRuns: 2 });
    const agent = createAgent({ model: twoStepModel(), tools: [lookup], store });
    const parkedAgent = createAgent({
      model: twoStepModel(),
      tools: [lookup],
      store,
      gates: [askAll],
      approval: { durable: true },
    });
    const parked = await parkedAgent.run("Needs a person");
    expect(parked.status).toBe("awaiting_approval");
    const done = [];
    for (let index = 0; index < 5; index += 1) done.push(await agent.run(`task ${index}`));
    expect(done.every((result) => result.status === "completed")).toBe(true);
    // The parked run and the last two finished ones.
    expect(store.size).toBe(3);
    expect((await store.read(parked.runId)).length).toBeGreaterThan(0);
    expect((await store.read(done[4]!.runId)).at(-1)?.type).toBe("run-end");
    const readDropped = await store.read(done[0]!.runId).catch((error: unknown) => error);
    expect(RunLogDroppedError.isInstance(readDropped)).toBe(true);
    expect((readDropped as RunLogDroppedError).runId).toBe(done[0]!.runId);
    expect((readDropped as Error).message).toMatch(
      /^\[core\] run .* finished and its log was dropped/,
    );
    // Summaries stay, marked; the kept ones are not marked.
    const rows = await store.list({ order: "oldest" });
    expect(rows).toHaveLength(6);
    const byId = new Map(rows.map((row) => [row.runId, row]));
    expect(byId.get(done[0]!.runId)).toMatchObject({ status: "completed", logDropped: true });
    expect(byId.get(done[4]!.runId)?.logDropped).toBeUndefined();
    expect(byId.get(parked.runId)).toMatchObject({ status: "awaiting_approval" });
    // The parked run is still answerable and finishes.
    const approved = await parkedAgent.approve(parked.runId, { decision: "approve" });
    expect(approved.status).toBe("completed");
    // Approving it ended it: it is now the newest finished log, so done[3] went.
    expect(store.size).toBe(2);
    expect(RunLogDroppedError.isInstance(await store.read(done[3]!.runId).catch((e) => e))).toBe(
      true,
    );
  });

  it("resume, resumeStream and approve of a dropped run reject with RunLogDroppedError; appends to it are refused", async () => {
    const store = memoryEventStore({ maxFinishedRuns: 0 });
    const agent = createAgent({ model: twoStepModel(), tools: [lookup], store });
    const result = await agent.run("Where is A1?");
    expect(result.status).toBe("completed");
    expect(result.answer).toBe("Delivered.");
    expect(store.size).toBe(0);
    for (const attempt of [
      () => agent.resume(result.runId),
      () => agent.resumeStream(result.runId).result,
      () => agent.approve(result.runId, { decision: "approve" }),
      () => store.append(result.runId, [], { expectedSeq: 0 }),
    ]) {
      const error = await attempt().catch((caught: unknown) => caught);
      expect(RunLogDroppedError.isInstance(error)).toBe(true);
      expect((error as RunLogDroppedError).code).toBe("run_log_dropped");
    }
  });

  it("forgets the oldest dropped summaries past maxDroppedSummaries", async () => {
    const store = memoryEventStore({ maxFinishedRuns: 1, maxDroppedSummaries: 2 });
    const agent = createAgent({ model: twoStepModel(), tools: [lookup], store });
    const ids = [];
    for (let index = 0; index < 5; index += 1) ids.push((await agent.run(`t${index}`)).runId);
    const listed = (await store.list()).map((row) => row.runId).sort();
    expect(listed).toEqual([ids[2], ids[3], ids[4]].sort());
    // Forgotten entirely: an unknown run, as for any store.
    expect(await store.read(ids[0]!)).toEqual([]);
  });

  it("refuses options that are not counts, with a clear [core] error", () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "10"]) {
      expect(() => memoryEventStore({ maxFinishedRuns: bad as number })).toThrow(
        /^\[core\] memoryEventStore: maxFinishedRuns must be an integer of at least 0/,
      );
      expect(() => memoryEventStore({ maxDroppedSummaries: bad as number })).toThrow(
        InvalidArgumentError,
      );
    }
    expect(() => memoryEventStore(null as never)).toThrow(/^\[core\] memoryEventStore\(options\)/);
  });
});
