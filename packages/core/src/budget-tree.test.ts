import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { type Agent, createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { ModelRequest } from "./contracts/model.js";
import { requestBytes } from "./pricing.js";
import { memoryEventStore, type ScriptedReply, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const fetchPage = tool({
  name: "fetch_page",
  description: "Fetch a page (a paid API: each call costs).",
  input: v.object({ page: v.number() }),
  trust: "trusted",
  costUsd: 0.0004,
  run: async ({ page }) => `page ${page}: ${"line; ".repeat(30)}`,
});

/** A model that never stops calling tools and bills every call at its worst case's output. */
function runaway(name: string, outputShare: number) {
  return scriptedModel(
    (request: ModelRequest, call: number): ScriptedReply => ({
      content: [
        {
          type: "tool_use",
          id: `toolu_${name}_${call}`,
          name: "fetch_page",
          input: { page: call },
        },
      ],
      usage: {
        input_tokens: Math.floor(requestBytes(request) / 4),
        output_tokens: Math.max(1, Math.floor(outputShare * request.max_tokens)),
      },
    }),
  );
}

/** A delegating model: each of its first `rounds` turns calls every delegate tool at once, then it answers. */
function delegator(name: string, tools: readonly string[], rounds: number) {
  return scriptedModel((request: ModelRequest, call: number): ScriptedReply => {
    const usage = { input_tokens: Math.floor(requestBytes(request) / 4), output_tokens: 50 };
    if (call > rounds || tools.length === 0) return { content: `${name} is done.`, usage };
    return {
      content: tools.map((item, index) => ({
        type: "tool_use" as const,
        id: `toolu_${name}_${call}_${index}`,
        name: item,
        input: { task: `part ${index} of round ${call}` },
      })),
      usage,
    };
  });
}

interface Shape {
  maxUsd: number;
  children: Array<{ share: number; output: number; grandchildren: number[] }>;
  rounds: number;
}

/** A three-level tree under one budget, every run in `store`. */
function buildTree(store: EventStore, shape: Shape): Agent {
  const tools = shape.children.map((child, index) => {
    const grandTools = child.grandchildren.map((output, g) =>
      createAgent({
        model: runaway(`g${index}_${g}`, output),
        tools: [fetchPage],
        agentId: `grandchild-${index}-${g}`,
        store,
      }).asTool({ name: `grand_${g}`, description: "Digs deeper", share: 0.5 }),
    );
    const agent =
      grandTools.length > 0
        ? createAgent({
            model: delegator(
              `c${index}`,
              grandTools.map((item) => item.name),
              2,
            ),
            tools: grandTools,
            agentId: `child-${index}`,
            store,
          })
        : createAgent({
            model: runaway(`c${index}`, child.output),
            tools: [fetchPage],
            agentId: `child-${index}`,
            store,
          });
    return agent.asTool({ name: `child_${index}`, description: "Works", share: child.share });
  });
  return createAgent({
    model: delegator(
      "root",
      tools.map((item) => item.name),
      shape.rounds,
    ),
    tools,
    agentId: "root",
    store,
    budget: { maxUsd: shape.maxUsd },
  });
}

/** Every run's billed spend in a store (responses, billed retries and errors, priced tool calls). */
async function storeSpend(store: EventStore): Promise<number> {
  let usd = 0;
  for (const row of await store.list({ limit: 1000 }))
    for (const event of await store.read(row.runId))
      if (event.type === "tool-call-intent") usd += event.costUsd ?? 0;
      else if (
        (event.type === "model-response" ||
          event.type === "model-retry" ||
          event.type === "model-error") &&
        typeof event.costUsd === "number"
      )
        usd += event.costUsd;
  return usd;
}

/** A memory store that records the order of every append across runs (to cut it anywhere). */
function recordingStore(): {
  store: EventStore;
  order: Array<{ runId: string; event: StoredEvent }>;
} {
  const inner = memoryEventStore();
  const order: Array<{ runId: string; event: StoredEvent }> = [];
  return {
    order,
    store: {
      name: inner.name,
      read: (runId) => inner.read(runId),
      list: (filter) => inner.list(filter),
      async append(runId, events, options) {
        const result = await inner.append(runId, events, options);
        for (const [index, event] of events.entries())
          order.push({
            runId,
            event: { ...event, seq: options.expectedSeq + index } as StoredEvent,
          });
        return result;
      },
    },
  };
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  maxUsd: fc.double({ min: 0.002, max: 0.2, noNaN: true }),
  children: fc.array(
    fc.record({
      share: fc.double({ min: 0.05, max: 1, noNaN: true }),
      output: fc.double({ min: 0.1, max: 1, noNaN: true }),
      grandchildren: fc.array(fc.double({ min: 0.1, max: 1, noNaN: true }), { maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  rounds: fc.integer({ min: 1, max: 3 }),
});

/** Model steps every run of a store took (responses, and requests that never got one). */
async function storeSteps(store: EventStore): Promise<number> {
  let steps = 0;
  for (const row of await store.list({ limit: 1000 })) {
    const answered = new Set<number>();
    const asked = new Set<number>();
    for (const event of await store.read(row.runId))
      if (event.type === "model-response") answered.add(event.step);
      else if (event.type === "model-request") asked.add(event.step);
    steps += new Set([...asked, ...answered]).size;
  }
  return steps;
}

interface StepShape {
  maxSteps: number;
  children: Array<{ share: number; ownSteps: number; grandchildren: number }>;
  rounds: number;
}

const stepShapeArb: fc.Arbitrary<StepShape> = fc.record({
  maxSteps: fc.integer({ min: 1, max: 30 }),
  children: fc.array(
    fc.record({
      share: fc.double({ min: 0.05, max: 1, noNaN: true }),
      ownSteps: fc.integer({ min: 1, max: 40 }),
      grandchildren: fc.integer({ min: 0, max: 2 }),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  rounds: fc.integer({ min: 1, max: 3 }),
});

/** A tree of runaway workers (they never answer) under a root `maxSteps`, no money cap. */
function buildStepTree(store: EventStore, shape: StepShape): Agent {
  const tools = shape.children.map((child, index) => {
    const grand = Array.from({ length: child.grandchildren }, (_, g) =>
      createAgent({
        model: runaway(`g${index}_${g}`, 0.1),
        tools: [fetchPage],
        agentId: `grandchild-${index}-${g}`,
        store,
        budget: { maxSteps: 10 },
      }).asTool({ name: `grand_${g}`, description: "Digs deeper", share: 0.5 }),
    );
    const agent = createAgent({
      model:
        grand.length > 0
          ? delegator(
              `c${index}`,
              grand.map((item) => item.name),
              2,
            )
          : runaway(`c${index}`, 0.1),
      tools: grand.length > 0 ? grand : [fetchPage],
      agentId: `child-${index}`,
      store,
      budget: { maxSteps: child.ownSteps },
    });
    return agent.asTool({ name: `child_${index}`, description: "Works", share: child.share });
  });
  return createAgent({
    model: delegator(
      "root",
      tools.map((item) => item.name),
      shape.rounds,
    ),
    tools,
    agentId: "root",
    store,
    budget: { maxSteps: shape.maxSteps },
  });
}

describe("one maxSteps for a tree of runs", () => {
  it("property: parallel children and grandchildren never take the tree past the root's maxSteps", async () => {
    await fc.assert(
      fc.asyncProperty(stepShapeArb, async (shape) => {
        const store = memoryEventStore();
        const result = await buildStepTree(store, shape).run("Do the work.", {
          runId: "run_steps",
        });
        expect(result.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
        expect(await storeSteps(store)).toBeLessThanOrEqual(shape.maxSteps);
        // Each child's cap was its share of the steps left, never more than its own.
        for (const event of await store.read("run_steps"))
          if (event.type === "child-run-start") {
            expect(event.budget.maxSteps!).toBeLessThanOrEqual(shape.maxSteps);
            const own = shape.children[Number(event.tool.slice("child_".length))]!.ownSteps;
            expect(event.budget.maxSteps!).toBeLessThanOrEqual(own);
          }
      }),
      { numRuns: 40 },
    );
  });

  it("property: cut the tree's logs anywhere (a crash), resume from the root: still never past maxSteps", async () => {
    await fc.assert(
      fc.asyncProperty(
        stepShapeArb,
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (shape, where) => {
          const { store, order } = recordingStore();
          await buildStepTree(store, shape).run("Do the work.", { runId: "run_steps" });
          const cut = Math.max(1, Math.floor(where * order.length));
          const partial = memoryEventStore();
          const prefix = order.slice(0, cut);
          for (const runId of new Set(prefix.map((entry) => entry.runId)))
            await partial.append(
              runId,
              prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
              { expectedSeq: 0 },
            );
          const resumed = await buildStepTree(partial, shape).resume("run_steps");
          expect(resumed.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
          expect(await storeSteps(partial)).toBeLessThanOrEqual(shape.maxSteps);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a parent's own next step counts its ended children's steps", async () => {
    const store = memoryEventStore();
    const child = createAgent({
      model: runaway("c", 0.1),
      tools: [fetchPage],
      agentId: "child",
      store,
      budget: { maxSteps: 3 },
    });
    const root = createAgent({
      model: delegator("root", ["child"], 5),
      tools: [child.asTool({ name: "child", description: "Works" })],
      agentId: "root",
      store,
      budget: { maxSteps: 6 },
    });
    const result = await root.run("go", { runId: "run_own_steps" });
    // Root step 1 (1), child 3 (4), root step 2 (5), a second child gets the 1 left (6): stop.
    expect(await storeSteps(store)).toBe(6);
    expect(result.steps).toBe(2);
    expect(result.status).toBe("stopped");
    const ends = (await store.read("run_own_steps")).filter(
      (event) => event.type === "child-run-end",
    );
    expect(ends.map((event) => (event as { treeSteps?: number }).treeSteps)).toEqual([3, 1]);
  });
});

interface RemoteShape {
  maxUsd: number;
  maxTokens: number | undefined;
  maxSteps: number | undefined;
  shares: number[];
}

const remoteShapeArb: fc.Arbitrary<RemoteShape> = fc.record({
  maxUsd: fc.double({ min: 0.01, max: 1, noNaN: true }),
  maxTokens: fc.option(fc.integer({ min: 2_000, max: 100_000 }), { nil: undefined }),
  maxSteps: fc.option(fc.integer({ min: 2, max: 60 }), { nil: undefined }),
  shares: fc.array(fc.double({ min: 0.1, max: 1, noNaN: true }), { minLength: 1, maxLength: 5 }),
});

/** A root whose children are handed to another process (they park it `awaiting_child`). */
function remoteTree(store: EventStore, shape: RemoteShape): Agent {
  const worker = createAgent({
    model: runaway("w", 0.5),
    tools: [fetchPage],
    agentId: "worker",
    store,
  });
  const tools = shape.shares.map((share, index) =>
    worker.asTool({ name: `part_${index}`, description: "Works elsewhere", share }),
  );
  return createAgent({
    model: delegator(
      "root",
      tools.map((item) => item.name),
      1,
    ),
    tools,
    agentId: "root",
    store,
    budget: {
      maxUsd: shape.maxUsd,
      ...(shape.maxTokens !== undefined ? { maxTokens: shape.maxTokens } : {}),
      ...(shape.maxSteps !== undefined ? { maxSteps: shape.maxSteps } : {}),
    },
    childRunner: {
      name: "queue",
      async run(_request, control) {
        const done = await control.recorded();
        if (done) return done;
        await control.create();
        return { type: "parked", status: "awaiting_child" };
      },
    },
  });
}

/** The caps the root's log gave its children, summed, and what the root had spent itself. */
async function remoteCaps(store: EventStore, runId: string) {
  const log = await store.read(runId);
  const sum = { usd: 0, tokens: 0, steps: 0, children: 0 };
  const own = { usd: 0, tokens: 0, steps: 0 };
  for (const event of log)
    if (event.type === "child-run-start") {
      sum.usd += event.budget.maxUsd ?? 0;
      sum.tokens += event.budget.maxTokens ?? 0;
      sum.steps += event.budget.maxSteps ?? 0;
      sum.children += 1;
    } else if (event.type === "model-response") {
      own.usd += event.costUsd;
      own.tokens += event.response.usage.input_tokens + event.response.usage.output_tokens;
      own.steps += 1;
    }
  return { sum, own };
}

describe("children run elsewhere (a childRunner) share one budget", () => {
  it("property: the caps of parallel children handed off never add up past what the parent had left, also when it is resumed halfway through starting them", async () => {
    await fc.assert(
      fc.asyncProperty(
        remoteShapeArb,
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (shape, where) => {
          const { store, order } = recordingStore();
          const first = await remoteTree(store, shape).run("Do the work.", { runId: "run_remote" });
          expect(first.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
          const { sum, own } = await remoteCaps(store, "run_remote");
          const bound = (cap: number | undefined, used: number, total: number) => {
            if (cap !== undefined) expect(total).toBeLessThanOrEqual(cap - used + 1e-9);
          };
          bound(shape.maxUsd, own.usd, sum.usd);
          bound(shape.maxTokens, own.tokens, sum.tokens);
          bound(shape.maxSteps, own.steps, sum.steps);
          // A crash after some of the children were started: the resumed parent starts the
          // rest with the parts it would have given them.
          const starts = order.filter(
            (entry) => entry.runId === "run_remote" && entry.event.type === "child-run-start",
          );
          if (starts.length === 0) return;
          expect(first.status).toBe("awaiting_child");
          const keep = Math.floor(where * starts.length);
          const cutAt =
            keep === 0
              ? order.findIndex((entry) => entry.event === starts[0]!.event)
              : order.findIndex((entry) => entry.event === starts[keep - 1]!.event) + 1;
          const partial = memoryEventStore();
          const prefix = order.slice(0, cutAt);
          for (const runId of new Set(prefix.map((entry) => entry.runId)))
            await partial.append(
              runId,
              prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
              { expectedSeq: 0 },
            );
          const resumed = await remoteTree(partial, shape).resume("run_remote");
          expect(resumed.status).toBe("awaiting_child");
          const after = await remoteCaps(partial, "run_remote");
          expect(after.sum.children).toBe(sum.children);
          bound(shape.maxUsd, after.own.usd, after.sum.usd);
          bound(shape.maxTokens, after.own.tokens, after.sum.tokens);
          bound(shape.maxSteps, after.own.steps, after.sum.steps);
          // Resumed or not, the same children got the same caps.
          expect(after.sum.usd).toBeCloseTo(sum.usd, 9);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("the calls of one turn split what is left: with share 1 each gets an equal part, resumed or not", async () => {
    const shape: RemoteShape = {
      maxUsd: 0.3,
      maxTokens: undefined,
      maxSteps: 31,
      shares: [1, 1, 1],
    };
    const { store, order } = recordingStore();
    await remoteTree(store, shape).run("Do the work.", { runId: "run_remote" });
    const caps = async (from: EventStore) =>
      (await from.read("run_remote")).flatMap((event) =>
        event.type === "child-run-start" ? [event.budget] : [],
      );
    const { own } = await remoteCaps(store, "run_remote");
    const whole = await caps(store);
    expect(whole).toHaveLength(3);
    for (const budget of whole) {
      expect(budget.maxUsd).toBeCloseTo((0.3 - own.usd) / 3, 12);
      expect(budget.maxSteps).toBe(10);
    }
    // The process dies after the first child was handed off; the resumed parent gives the
    // other two the same parts (not all that is left, not nothing).
    const firstStart = order.findIndex(
      (entry) => entry.runId === "run_remote" && entry.event.type === "child-run-start",
    );
    const partial = memoryEventStore();
    const prefix = order.slice(0, firstStart + 1);
    for (const runId of new Set(prefix.map((entry) => entry.runId)))
      await partial.append(
        runId,
        prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
        { expectedSeq: 0 },
      );
    await remoteTree(partial, shape).resume("run_remote");
    expect(await caps(partial)).toEqual(whole);
  });
});

describe("one budget for a tree of runs", () => {
  it("property: parallel children and grandchildren never take the tree past the root's maxUsd, and their spend is the root's", async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, async (shape) => {
        const store = memoryEventStore();
        const result = await buildTree(store, shape).run("Do the work.", { runId: "run_root" });
        const total = await storeSpend(store);
        expect(total).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
        expect(result.costUsd).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
        // Every child's spend reached the root's log (child-run-end), none twice.
        if (result.status === "completed" || result.status === "stopped")
          expect(result.costUsd).toBeCloseTo(total, 9);
        // Each child's caps were its share of what was left, never more than the root's.
        for (const event of await store.read("run_root"))
          if (event.type === "child-run-start")
            expect(event.budget.maxUsd!).toBeLessThanOrEqual(shape.maxUsd + 1e-12);
      }),
      { numRuns: 40 },
    );
  });

  it("property: cut the tree's log anywhere (a crash), resume from the root: still never past the cap", async () => {
    await fc.assert(
      fc.asyncProperty(
        shapeArb,
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (shape, where) => {
          const { store, order } = recordingStore();
          await buildTree(store, shape).run("Do the work.", { runId: "run_root" });
          const cut = Math.max(1, Math.floor(where * order.length));
          const partial = memoryEventStore();
          const prefix = order.slice(0, cut);
          for (const runId of new Set(prefix.map((entry) => entry.runId)))
            await partial.append(
              runId,
              prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
              { expectedSeq: 0 },
            );
          const resumed = await buildTree(partial, shape).resume("run_root");
          expect(resumed.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
          const total = await storeSpend(partial);
          expect(total).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
          expect(resumed.costUsd).toBeLessThanOrEqual(shape.maxUsd + 1e-9);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a child that could not start (its first write refused) leaves its siblings the budget it never used", async () => {
    const inner = memoryEventStore();
    const refused = childRunId("run_refused", "toolu_root_1_0");
    const store: EventStore = {
      name: inner.name,
      read: (runId) => inner.read(runId),
      list: (filter) => inner.list(filter),
      append: (runId, events, options) =>
        runId === refused
          ? Promise.reject(new Error("this store cannot write that run"))
          : inner.append(runId, events, options),
    };
    const worker = (name: string) =>
      createAgent({
        model: scriptedModel([{ content: "Done.", usage: { input_tokens: 10, output_tokens: 5 } }]),
        tools: [fetchPage],
        agentId: name,
        store,
      }).asTool({ name, description: "Works" });
    const root = createAgent({
      model: delegator("root", ["first", "second"], 1),
      tools: [worker("first"), worker("second")],
      agentId: "root",
      store,
      budget: { maxUsd: 0.5, maxSteps: 10 },
    });
    await root.run("go", { runId: "run_refused" });
    const log = await store.read("run_refused");
    const results = log.filter((event) => event.type === "tool-call-result");
    expect(results.map((event) => (event as { errorKind?: string }).errorKind)).toEqual([
      "child_failed",
      undefined,
    ]);
    // The failed child is ended in the parent's log with nothing spent.
    expect(log.find((event) => event.type === "child-run-end")).toMatchObject({
      childRunId: refused,
      status: "failed",
      costUsd: 0,
      treeSteps: 0,
    });
  });

  it("a child's caps are its share of what the parent has left when the call starts", async () => {
    const store = memoryEventStore();
    const child = createAgent({
      model: runaway("c", 1),
      tools: [fetchPage],
      agentId: "child",
      store,
      budget: { maxUsd: 0.04, maxSteps: 50 },
    });
    const root = createAgent({
      model: delegator("root", ["child"], 1),
      tools: [child.asTool({ name: "child", description: "Works", share: 0.25 })],
      agentId: "root",
      store,
      budget: { maxUsd: 0.1 },
    });
    const result = await root.run("go", { runId: "run_share" });
    const log = await store.read("run_share");
    const firstCost = (log.find((event) => event.type === "model-response") as { costUsd: number })
      .costUsd;
    const start = log.find((event) => event.type === "child-run-start") as {
      budget: { maxUsd: number; maxSteps: number };
    };
    expect(start.budget.maxUsd).toBeCloseTo(Math.min(0.04, 0.25 * (0.1 - firstCost)), 12);
    expect(start.budget.maxSteps).toBe(50);
    const end = log.find((event) => event.type === "child-run-end") as {
      costUsd: number;
      status: string;
    };
    expect(end.costUsd).toBeLessThanOrEqual(start.budget.maxUsd + 1e-12);
    expect(end.status).toBe("stopped");
    expect(result.costUsd).toBeLessThanOrEqual(0.1);
  });

  it("a priced tool in one child is refused when its running siblings left the tree too little", async () => {
    const store = memoryEventStore();
    const paid: string[] = [];
    const report = tool({
      name: "buy_report",
      description: "Buys a credit report.",
      input: v.object({}),
      costUsd: 0.03,
      run: (_args, context) => {
        paid.push(context.runId);
        return "report";
      },
    });
    const buyer = (name: string) =>
      createAgent({
        model: scriptedModel([
          {
            content: [{ type: "tool_use", id: `toolu_${name}`, name: "buy_report", input: {} }],
            usage: { input_tokens: 10, output_tokens: 5 },
          },
          { content: "Bought.", usage: { input_tokens: 10, output_tokens: 5 } },
        ]),
        tools: [report],
        agentId: name,
        store,
        maxTokens: 64,
      }).asTool({ name, description: "Buys a report." });
    const root = createAgent({
      model: delegator("root", ["first", "second"], 1),
      tools: [buyer("first"), buyer("second")],
      agentId: "root",
      store,
      maxTokens: 64,
      budget: { maxUsd: 0.05 },
    });
    const result = await root.run("Buy two reports.", { runId: "run_buy" });
    // Each child's own cap allows one report ($0.03 of about $0.05); the tree allows one.
    expect(paid).toHaveLength(1);
    const refusal = (
      await Promise.all(
        ["first", "second"].map(async (_, index) =>
          store.read(childRunId("run_buy", `toolu_root_1_${index}`)),
        ),
      )
    )
      .flat()
      .find((event) => event.type === "tool-call-refusal");
    expect(refusal).toMatchObject({
      tool: "buy_report",
      decision: { reason: "budget_exceeded", message: expect.stringContaining("tree of agents") },
    });
    expect(result.costUsd).toBeLessThanOrEqual(0.05);
    expect(await storeSpend(store)).toBeLessThanOrEqual(0.05);
  });
});
