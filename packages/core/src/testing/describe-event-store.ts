/**
 * The EventStore conformance suite. Every store runs it first, then its own cases.
 *
 * It needs vitest (a devDependency of the project that runs it, never a dependency of
 * `@loopguard/core`): vitest is imported lazily, here and nowhere else in core, so importing
 * `@loopguard/core/testing` for `scriptedModel` does not need vitest installed.
 */
import type {
  EventStore,
  RunSummary,
  StoredEvent,
  StoredEventInput,
} from "../contracts/event-store.js";
import { AppendConflictError, CorruptLogError, LoopguardError } from "../errors.js";
import type { RunStatus } from "../events.js";
import { filterSummaries } from "../memory-event-store.js";
import { summarize } from "../summary.js";
import { eventBuilders as build, smallRun } from "./event-builders.js";
import { loadSuite } from "./load-suite.js";

/** What `describeEventStore` needs to know about a store under test. */
export interface EventStoreSuiteOptions {
  /** The name of the `describe` block, e.g. `jsonlEventStore`. */
  name: string;
  /** A fresh, empty store (a new directory, database or schema per call). */
  create: () => EventStore | Promise<EventStore>;
  /**
   * A new store instance on the same data as `previous` (which the suite has closed): the
   * durability cases run only when this is given.
   */
  reopen?: (previous: EventStore) => EventStore | Promise<EventStore>;
  /**
   * Simulates a crash in the middle of writing the run's next event: leaves a half-written
   * last record behind (stores whose writes are atomic, like SQLite, leave this out). The
   * store is closed when this is called.
   */
  corruptTail?: (runId: string, store: EventStore) => void | Promise<void>;
  /**
   * Damages the stored record of event `seq` of the run (the store is closed when this is
   * called). May return a piece of text the store's error must contain to locate the damage,
   * e.g. `run.jsonl:3` for a file store.
   */
  corruptLine?: (
    runId: string,
    seq: number,
    store: EventStore,
  ) => string | undefined | Promise<string | undefined>;
  /**
   * Set only for stores that keep runs in memory under any string id (core's
   * `memoryEventStore`): skips the case that path-like run ids such as `../x` are rejected.
   * Every store that names files, rows or keys after the run id must reject them.
   */
  acceptsPathLikeRunIds?: boolean;
  /**
   * Whether `list` implements the tree filters `parentRunId` and `rootRunId` (default `true`).
   * A store that does not yet may pass `false`: the tree-filter case is then registered as
   * skipped (it shows as skipped in the report, never as passed). The summary fields
   * (`parentRunId`, `rootRunId`, `depth`) are checked either way.
   */
  supportsTreeFilter?: boolean;
}

let runCounter = 0;

/** A fresh run id for one case. */
function newRunId(label: string): string {
  runCounter += 1;
  return `run_${label}_${process.pid}_${runCounter}_${Math.random().toString(36).slice(2, 8)}`;
}

function stored(events: readonly StoredEventInput[], fromSeq = 0): StoredEvent[] {
  return events.map(
    (event, index) => ({ ...structuredClone(event), seq: fromSeq + index }) as StoredEvent,
  );
}

function expectedSummary(runId: string, events: readonly StoredEventInput[]): RunSummary {
  return summarize(undefined, runId, stored(events));
}

/** What every group of cases shares: vitest, the options and the helpers over the stores made. */
interface Suite {
  vitest: Awaited<ReturnType<typeof loadSuite>>;
  options: EventStoreSuiteOptions;
  create: () => Promise<EventStore>;
  closeAndReopen: (store: EventStore) => Promise<EventStore>;
  isConflict: (error: unknown) => boolean;
  isCorrupt: (error: unknown) => boolean;
  expectRejection: (promise: Promise<unknown>) => Promise<unknown>;
  /** Stores made and not closed yet: each case's stores close after it. */
  open: Set<EventStore>;
}

/**
 * Registers the EventStore conformance suite (vitest `describe`/`it`) for one store: ordering,
 * seq assignment, the `expectedSeq` fence under concurrency, durability across reopen, torn
 * tails, corrupt records, listing and its filters, 5 MB payloads, unicode, unknown runs,
 * double close and invalid run ids.
 *
 * Needs vitest; await it at the top level of a test file, or no test is registered.
 *
 * @example
 * import { describeEventStore } from "@loopguard/core/testing";
 * await describeEventStore({
 *   name: "jsonlEventStore",
 *   create: () => jsonlEventStore({ dir: mkdtempSync(join(tmpdir(), "lg-")) }),
 *   reopen: (previous) => jsonlEventStore({ dir: dirOf(previous) }),
 * });
 */
export async function describeEventStore(options: EventStoreSuiteOptions): Promise<void> {
  const vitest = await loadSuite("describeEventStore", options, "reopen, corruptTail, corruptLine");
  const { afterEach, describe } = vitest;
  const open = new Set<EventStore>();

  const create = async (): Promise<EventStore> => {
    const store = await options.create();
    open.add(store);
    return store;
  };
  const closeAndReopen = async (store: EventStore): Promise<EventStore> => {
    await store.close?.();
    open.delete(store);
    const again = await options.reopen!(store);
    open.add(again);
    return again;
  };
  // `isInstance` of a subclass checks only the loopguard brand, so the code is checked too.
  const isConflict = (error: unknown) =>
    AppendConflictError.isInstance(error) && (error as LoopguardError).code === "append_conflict";
  const isCorrupt = (error: unknown) =>
    CorruptLogError.isInstance(error) && (error as LoopguardError).code === "corrupt_log";
  const expectRejection = async (promise: Promise<unknown>): Promise<unknown> => {
    try {
      await promise;
    } catch (error) {
      return error;
    }
    throw new Error("expected a rejection, but the promise resolved");
  };

  const suite: Suite = {
    open,
    vitest,
    options,
    create,
    closeAndReopen,
    isConflict,
    isCorrupt,
    expectRejection,
  };
  describe(`EventStore conformance: ${options.name}`, () => {
    afterEach(async () => {
      const stores = [...open];
      open.clear();
      await Promise.all(stores.map((store) => store.close?.()));
    });

    appendCases(suite);
    payloadCases(suite);
    listCases(suite);
    durabilityCases(suite);
  });
}

/** Appends: seq, ordering, the expectedSeq fence under concurrency, copies. */
function appendCases(suite: Suite): void {
  const { expect, it } = suite.vitest;
  const { create, isConflict, expectRejection } = suite;
  it("has a name", async () => {
    const store = await create();
    expect(typeof store.name).toBe("string");
    expect(store.name.length).toBeGreaterThan(0);
  });

  it("assigns seq in order and reads back exactly what was appended", async () => {
    const store = await create();
    const runId = newRunId("order");
    const first = smallRun(runId, 1_700_000_000_000).slice(0, 3);
    expect(await store.append(runId, first, { expectedSeq: 0 })).toEqual({ nextSeq: 3 });
    const second = [
      build.result(1, 1_700_000_000_010, '{"status":"delivered"}'),
      build.end("completed", 1_700_000_000_011),
    ];
    expect(await store.append(runId, second, { expectedSeq: 3 })).toEqual({ nextSeq: 5 });
    const events = await store.read(runId);
    expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(events).toEqual(stored([...first, ...second]));
  });

  it("keeps runs apart", async () => {
    const store = await create();
    const a = newRunId("a");
    const b = newRunId("b");
    await store.append(a, smallRun(a, 1000), { expectedSeq: 0 });
    await store.append(b, smallRun(b, 2000).slice(0, 2), { expectedSeq: 0 });
    expect(await store.read(a)).toEqual(stored(smallRun(a, 1000)));
    expect(await store.read(b)).toEqual(stored(smallRun(b, 2000).slice(0, 2)));
  });

  it("accepts pipelined appends issued before the previous one resolved, in order", async () => {
    const store = await create();
    const runId = newRunId("pipeline");
    const events = smallRun(runId, 5000);
    const results = await Promise.all(
      events.map((event, index) => store.append(runId, [event], { expectedSeq: index })),
    );
    expect(results.map((result) => result.nextSeq)).toEqual([1, 2, 3, 4]);
    expect(await store.read(runId)).toEqual(stored(events));
  });

  it("rejects an append whose expectedSeq is not the log's length, and changes nothing", async () => {
    const store = await create();
    const runId = newRunId("fence");
    const events = smallRun(runId, 7000);
    await store.append(runId, events.slice(0, 2), { expectedSeq: 0 });
    for (const expectedSeq of [0, 1, 3, 10]) {
      const error = await expectRejection(store.append(runId, events.slice(2), { expectedSeq }));
      expect(isConflict(error), String(error)).toBe(true);
      expect((error as LoopguardError).code).toBe("append_conflict");
    }
    const fresh = newRunId("fence_fresh");
    const error = await expectRejection(
      store.append(fresh, smallRun(fresh, 1), { expectedSeq: 1 }),
    );
    expect(isConflict(error), String(error)).toBe(true);
    expect(await store.read(fresh)).toEqual([]);
    expect(await store.read(runId)).toEqual(stored(events.slice(0, 2)));
  });

  it("lets exactly one of two concurrent appends with the same expectedSeq win", async () => {
    const store = await create();
    for (let round = 0; round < 5; round += 1) {
      const runId = newRunId(`race${round}`);
      await store.append(runId, [build.start(runId, 10)], { expectedSeq: 0 });
      const mine = [build.request(1, 20)];
      const theirs = [build.request(1, 30), build.response(1, 31, "theirs")];
      const settled = await Promise.allSettled([
        store.append(runId, mine, { expectedSeq: 1 }),
        store.append(runId, theirs, { expectedSeq: 1 }),
      ]);
      const won = settled.filter((outcome) => outcome.status === "fulfilled");
      const lost = settled.filter(
        (outcome): outcome is PromiseRejectedResult => outcome.status === "rejected",
      );
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(isConflict(lost[0]!.reason), String(lost[0]!.reason)).toBe(true);
      const winner = settled[0]!.status === "fulfilled" ? mine : theirs;
      expect(await store.read(runId)).toEqual(stored([build.start(runId, 10), ...winner]));
    }
  });

  it("lets exactly one of ten concurrent writers win", async () => {
    const store = await create();
    const runId = newRunId("crowd");
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, (_, writer) =>
        store.append(runId, [build.start(runId, writer)], { expectedSeq: 0 }),
      ),
    );
    const winners = settled.flatMap((outcome, writer) =>
      outcome.status === "fulfilled" ? [writer] : [],
    );
    expect(winners).toHaveLength(1);
    for (const outcome of settled) {
      if (outcome.status === "rejected")
        expect(isConflict(outcome.reason), String(outcome.reason)).toBe(true);
    }
    expect(await store.read(runId)).toEqual(stored([build.start(runId, winners[0]!)]));
  });

  it("stores copies: changing an appended or a read event changes nothing stored", async () => {
    const store = await create();
    const runId = newRunId("copy");
    const events = smallRun(runId, 100);
    const pristine = structuredClone(events);
    await store.append(runId, events, { expectedSeq: 0 });
    (events[0] as { task: string }).task = "changed after append";
    const read = await store.read(runId);
    (read[2] as { costUsd: number }).costUsd = 99;
    expect(await store.read(runId)).toEqual(stored(pristine));
  });
}

/** Payloads and edges: large batches, 5 MB events, unicode, unknown and invalid runs, double close. */
function payloadCases(suite: Suite): void {
  const { expect, it } = suite.vitest;
  const { create, closeAndReopen, expectRejection, open, options } = suite;
  const { reopen } = options;
  it("writes a thousand events in one append and reads them in order (and in batches, with readBatches)", async () => {
    const store = await create();
    const runId = newRunId("many");
    const events: StoredEventInput[] = [build.start(runId, 0)];
    for (let index = 1; index < 1000; index += 1)
      events.push({
        type: "model-retry",
        step: 1,
        attempt: index,
        kind: "overloaded",
        status: 529,
        waitMs: index,
        message: `retry ${index}`,
        at: index,
      });
    expect(await store.append(runId, events, { expectedSeq: 0 })).toEqual({ nextSeq: 1000 });
    const read = await store.read(runId);
    expect(read).toHaveLength(1000);
    expect(read.every((event, index) => event.seq === index && event.at === index)).toBe(true);
    // The optional readBatches (resume streams long logs through it) adds up to read().
    if (store.readBatches) {
      const batches: StoredEvent[] = [];
      let largest = 0;
      for await (const batch of store.readBatches(runId, { batchSize: 64 })) {
        largest = Math.max(largest, batch.length);
        batches.push(...batch);
      }
      expect(batches).toEqual(read);
      expect(largest).toBeLessThanOrEqual(64);
      const unknown: StoredEvent[] = [];
      for await (const batch of store.readBatches(newRunId("none"))) unknown.push(...batch);
      expect(unknown).toEqual([]);
    }
  });

  it("stores a 5 MB event", async () => {
    let store = await create();
    const runId = newRunId("large");
    const unit = 'Lorem ipsum dolor sit amet, 数据 🧾 "quoted" \\ back\n';
    const content = unit.repeat(Math.ceil((5 * 1024 * 1024) / unit.length));
    const events = [build.start(runId, 1), build.request(1, 2), build.result(1, 3, content)];
    // The result needs a turn before it only for a fold; the store stores any events.
    await store.append(runId, events, { expectedSeq: 0 });
    const read = await store.read(runId);
    expect((read[2] as { content: string }).content.length).toBe(content.length);
    expect((read[2] as { content: string }).content === content).toBe(true);
    if (reopen) {
      store = await closeAndReopen(store);
      const again = await store.read(runId);
      expect((again[2] as { content: string }).content === content).toBe(true);
      expect(await store.append(runId, [build.end("completed", 4)], { expectedSeq: 3 })).toEqual({
        nextSeq: 4,
      });
    }
  });

  it("round-trips unicode: emoji, right-to-left text, astral characters, U+2028 and escapes", async () => {
    let store = await create();
    const runId = newRunId("unicode");
    const texts = [
      "🧑‍🚀 refund 💸 for 👩🏽‍💻",
      "مرحبا، أريد استرداد المبلغ — שלום עולם",
      "𝒳𝒴𝒵 𠜎𠜱𠝹 𝄞",
      "line\u2028separator\u2029paragraph",
      'new\nline\r\ncarriage\ttab "quote" \\backslash\\ \u0000nul \u001fus',
      "\u202Eright-to-left override\u202C and zero\u200Bwidth",
    ];
    const events = [
      build.start(runId, 1, { task: texts.join(" | ") }),
      ...texts.map((text, index) => build.result(index + 1, index + 2, text)),
    ];
    await store.append(runId, events, { expectedSeq: 0 });
    expect(await store.read(runId)).toEqual(stored(events));
    if (reopen) {
      store = await closeAndReopen(store);
      expect(await store.read(runId)).toEqual(stored(events));
    }
  });

  it("reads an unknown run as [] and does not list it", async () => {
    const store = await create();
    const runId = newRunId("unknown");
    expect(await store.read(runId)).toEqual([]);
    expect((await store.list()).some((summary) => summary.runId === runId)).toBe(false);
  });

  it("rejects invalid run ids with a clear error", async () => {
    const store = await create();
    const bad: unknown[] = ["", 42, null, undefined];
    if (!options.acceptsPathLikeRunIds)
      bad.push("../x", "../../etc/passwd", "a/b", "a\\b", "x\u0000y", "/abs", "x".repeat(1000));
    for (const runId of bad) {
      const error = await expectRejection(
        store.append(runId as string, [build.start("x", 1)], { expectedSeq: 0 }),
      );
      expect(
        LoopguardError.isInstance(error),
        `append(${JSON.stringify(runId)}) should reject with a loopguard error, got ${String(error)}`,
      ).toBe(true);
      expect((error as LoopguardError).code).toBe("invalid_argument");
      expect((error as Error).message).toMatch(/^\[[a-z-]+\] /);
      if (!options.acceptsPathLikeRunIds) {
        const readError = await expectRejection(store.read(runId as string));
        expect(
          LoopguardError.isInstance(readError),
          `read(${JSON.stringify(runId)}) should reject, got ${String(readError)}`,
        ).toBe(true);
      }
    }
  });

  it("is safe to close twice", async () => {
    const store = await create();
    const runId = newRunId("close");
    await store.append(runId, smallRun(runId, 1), { expectedSeq: 0 });
    await store.close?.();
    await store.close?.();
    open.delete(store);
  });
}

/** `list` and its filters. */
function listCases(suite: Suite): void {
  const { describe, expect, it } = suite.vitest;
  const { create, closeAndReopen } = suite;
  const { reopen } = suite.options;
  describe("list", () => {
    const populate = async (store: EventStore) => {
      const runs: Array<{ runId: string; events: StoredEventInput[] }> = [];
      const add = (
        agentId: string,
        status: Exclude<RunStatus, "running"> | "running",
        at: number,
        costUsd: number,
      ) => {
        const runId = newRunId(`list_${agentId}_${status}`);
        const full = smallRun(runId, at, {
          agentId,
          costUsd,
          task: `task of ${runId}`,
          ...(status === "running" ? {} : { status }),
        });
        runs.push({ runId, events: status === "running" ? full.slice(0, 3) : full });
      };
      add("support", "completed", 10_000, 0.01);
      add("support", "running", 20_000, 0.02);
      add("billing", "completed", 30_000, 0.03);
      add("billing", "stopped", 40_000, 0.04);
      add("support", "failed", 50_000, 0.05);
      add("billing", "running", 60_000, 0.06);
      for (const run of runs) await store.append(run.runId, run.events, { expectedSeq: 0 });
      const ids = new Set(runs.map((run) => run.runId));
      const expected = runs.map((run) => expectedSummary(run.runId, run.events));
      const mine = async (filter?: Parameters<EventStore["list"]>[0]) =>
        (await store.list(filter)).filter((summary) => ids.has(summary.runId));
      return { runs, expected, mine };
    };

    it("lists summaries newest first, as core's summarize computes them", async () => {
      const store = await create();
      const { expected, mine } = await populate(store);
      const listed = await mine();
      expect(listed).toEqual(filterSummaries(expected));
      expect(listed.map((summary) => summary.updatedAt)).toEqual([
        60_002, 50_003, 40_003, 30_003, 20_002, 10_003,
      ]);
    });

    it("filters by status, several statuses, agent, updatedAfter and limit", async () => {
      const store = await create();
      const { expected, mine } = await populate(store);
      for (const filter of [
        { status: "completed" },
        { status: ["running", "failed"] },
        { status: "awaiting_approval" },
        { agentId: "billing" },
        { agentId: "billing", status: "running" },
        { updatedAfter: 40_003 },
        { updatedAfter: 40_002 },
      ]) {
        expect(await mine(filter), JSON.stringify(filter)).toEqual(
          filterSummaries(expected, filter),
        );
      }
      const limited = await store.list({ limit: 2 });
      expect(limited).toHaveLength(2);
      expect(limited[0]!.updatedAt).toBeGreaterThanOrEqual(limited[1]!.updatedAt);
      expect(await store.list({ limit: 0 })).toEqual([]);
    });

    it("orders oldest first on request and pages with an `after` cursor in either order", async () => {
      const store = await create();
      const { expected, mine } = await populate(store);
      expect(await mine({ order: "oldest" })).toEqual(
        filterSummaries(expected, { order: "oldest" }),
      );
      expect((await mine({ order: "oldest" })).map((summary) => summary.updatedAt)).toEqual([
        10_003, 20_002, 30_003, 40_003, 50_003, 60_002,
      ]);
      for (const order of ["newest", "oldest"] as const) {
        for (const agentId of [undefined, "billing"]) {
          const filter = { order, ...(agentId ? { agentId } : {}) };
          const whole = await mine(filter);
          // Page through the rows of this suite two at a time: the pages add up to the whole.
          const paged: RunSummary[] = [];
          let after: { updatedAt: number; runId: string } | undefined;
          for (let page = 0; page < 10; page += 1) {
            const rows = await mine({ ...filter, ...(after ? { after } : {}) });
            const next = rows.slice(0, 2);
            if (next.length === 0) break;
            paged.push(...next);
            const last = next.at(-1)!;
            after = { updatedAt: last.updatedAt, runId: last.runId };
          }
          expect(paged, JSON.stringify(filter)).toEqual(whole);
        }
      }
      // The cursor excludes its own row and everything before it.
      const newest = await mine();
      const cursor = { updatedAt: newest[2]!.updatedAt, runId: newest[2]!.runId };
      expect(await mine({ after: cursor })).toEqual(newest.slice(3));
      expect(await mine({ after: cursor, order: "oldest" })).toEqual(
        [...newest].reverse().slice(newest.length - 2),
      );
    });

    it("breaks ties by run id, in code-unit order, the same way in every store", async () => {
      const store = await create();
      const at = 700_000 + Math.floor(Math.random() * 1_000);
      const ids = ["run_tie_B", "run_tie_a", "run_tie_A", "run_tie_b"].map((id) => newRunId(id));
      for (const runId of ids)
        await store.append(runId, [{ ...smallRun(runId, at)[0]!, at }], { expectedSeq: 0 });
      const listed = (await store.list({ updatedAfter: at - 1 }))
        .filter((summary) => ids.includes(summary.runId))
        .map((summary) => summary.runId);
      expect(listed).toEqual([...ids].sort());
      const oldest = (await store.list({ updatedAfter: at - 1, order: "oldest" }))
        .filter((summary) => ids.includes(summary.runId))
        .map((summary) => summary.runId);
      expect(oldest).toEqual([...ids].sort());
    });

    it("updates a summary as its run advances", async () => {
      const store = await create();
      const runId = newRunId("advance");
      const events = smallRun(runId, 100_000, { agentId: "advance", costUsd: 0.25 });
      await store.append(runId, events.slice(0, 3), { expectedSeq: 0 });
      expect(
        (await store.list({ agentId: "advance" })).find((summary) => summary.runId === runId),
      ).toEqual(expectedSummary(runId, events.slice(0, 3)));
      await store.append(runId, events.slice(3), { expectedSeq: 3 });
      const summary = (await store.list({ agentId: "advance" })).find(
        (item) => item.runId === runId,
      );
      expect(summary).toEqual(expectedSummary(runId, events));
      expect(summary?.status).toBe("completed");
    });

    treeListCases(suite);

    if (reopen) {
      it("lists the same summaries after reopening", async () => {
        let store = await create();
        const { expected, mine } = await populate(store);
        const before = await mine();
        store = await closeAndReopen(store);
        const ids = new Set(expected.map((summary) => summary.runId));
        const after = (await store.list()).filter((summary) => ids.has(summary.runId));
        expect(after).toEqual(before);
        expect(after).toEqual(filterSummaries(expected));
      });
    }
  });
}

/** Two small trees (root, children, a grandchild) and a lone run, appended to a store. */
async function appendTrees(store: EventStore) {
  const at = 900_000 + Math.floor(Math.random() * 1_000);
  const runs: Array<{ runId: string; events: StoredEventInput[] }> = [];
  const add = (label: string, parent?: { runId: string; rootRunId: string; depth: number }) => {
    const runId = newRunId(`tree_${label}`);
    const events = smallRun(runId, at + runs.length * 10, { agentId: `tree_${label}` });
    if (parent) {
      const start = events[0] as Extract<StoredEventInput, { type: "run-start" }>;
      events[0] = {
        ...start,
        parent: { ...parent, callId: `toolu_${label}`, tool: `delegate_${label}` },
      };
    }
    runs.push({ runId, events });
    return runId;
  };
  const rootA = add("rootA");
  const childA1 = add("childA1", { runId: rootA, rootRunId: rootA, depth: 1 });
  const childA2 = add("childA2", { runId: rootA, rootRunId: rootA, depth: 1 });
  const grandA = add("grandA", { runId: childA1, rootRunId: rootA, depth: 2 });
  const rootB = add("rootB");
  const childB1 = add("childB1", { runId: rootB, rootRunId: rootB, depth: 1 });
  const lone = add("lone");
  for (const run of runs) await store.append(run.runId, run.events, { expectedSeq: 0 });
  const ids = new Set(runs.map((run) => run.runId));
  return { runs, ids, rootA, childA1, childA2, grandA, rootB, childB1, lone };
}

/** The tree fields of summaries and the `parentRunId` / `rootRunId` filters of `list`. */
function treeListCases(suite: Suite): void {
  const { expect, it } = suite.vitest;
  const { create } = suite;
  it("lists a child run with its parentRunId, rootRunId and depth (none on a root)", async () => {
    const store = await create();
    const tree = await appendTrees(store);
    const listed = new Map(
      (await store.list())
        .filter((summary) => tree.ids.has(summary.runId))
        .map((summary) => [summary.runId, summary]),
    );
    expect(listed.size).toBe(tree.runs.length);
    const fields = (runId: string) => {
      const summary = listed.get(runId)!;
      return [summary.parentRunId, summary.rootRunId, summary.depth];
    };
    for (const root of [tree.rootA, tree.rootB, tree.lone])
      expect(fields(root), root).toEqual([undefined, undefined, undefined]);
    expect(fields(tree.childA1)).toEqual([tree.rootA, tree.rootA, 1]);
    expect(fields(tree.childA2)).toEqual([tree.rootA, tree.rootA, 1]);
    expect(fields(tree.grandA)).toEqual([tree.childA1, tree.rootA, 2]);
    expect(fields(tree.childB1)).toEqual([tree.rootB, tree.rootB, 1]);
    for (const run of tree.runs)
      expect(listed.get(run.runId), run.runId).toEqual(expectedSummary(run.runId, run.events));
  });

  const treeFilter = suite.options.supportsTreeFilter === false ? it.skip : it;
  treeFilter(
    "filters by parentRunId (direct children) and rootRunId (every run below the root)",
    async () => {
      const store = await create();
      const tree = await appendTrees(store);
      const ids = async (filter: Parameters<EventStore["list"]>[0]) =>
        (await store.list(filter)).map((summary) => summary.runId).sort();
      const sorted = (...runIds: string[]) => [...runIds].sort();
      expect(await ids({ parentRunId: tree.rootA })).toEqual(sorted(tree.childA1, tree.childA2));
      expect(await ids({ parentRunId: tree.childA1 })).toEqual([tree.grandA]);
      expect(await ids({ parentRunId: tree.rootB })).toEqual([tree.childB1]);
      expect(await ids({ parentRunId: tree.grandA })).toEqual([]);
      expect(await ids({ parentRunId: tree.lone })).toEqual([]);
      expect(await ids({ rootRunId: tree.rootA })).toEqual(
        sorted(tree.childA1, tree.childA2, tree.grandA),
      );
      expect(await ids({ rootRunId: tree.rootB })).toEqual([tree.childB1]);
      expect(await ids({ rootRunId: tree.childA1 })).toEqual([]);
      expect(await ids({ rootRunId: `${tree.rootA}_unknown` })).toEqual([]);
      // The tree filters combine with the others (and with order and limit).
      expect(await ids({ rootRunId: tree.rootA, agentId: "tree_grandA" })).toEqual([tree.grandA]);
      expect(await ids({ parentRunId: tree.rootA, status: "failed" })).toEqual([]);
      const oldest = await store.list({ rootRunId: tree.rootA, order: "oldest", limit: 2 });
      expect(oldest.map((summary) => summary.runId)).toEqual([tree.childA1, tree.childA2]);
    },
  );
}

/** Durability across reopen, torn tails and corrupt records (when the store can simulate them). */
function durabilityCases(suite: Suite): void {
  const { describe, expect, it } = suite.vitest;
  const { create, closeAndReopen, isConflict, isCorrupt, expectRejection, open } = suite;
  const { reopen, corruptTail, corruptLine } = suite.options;
  if (reopen) {
    describe("durability", () => {
      it("keeps every appended event across a reopen, and the fence continues from there", async () => {
        let store = await create();
        const runId = newRunId("durable");
        const events = smallRun(runId, 1);
        await store.append(runId, events.slice(0, 2), { expectedSeq: 0 });
        await store.append(runId, events.slice(2, 3), { expectedSeq: 2 });
        store = await closeAndReopen(store);
        expect(await store.read(runId)).toEqual(stored(events.slice(0, 3)));
        const stale = await expectRejection(
          store.append(runId, events.slice(3), { expectedSeq: 2 }),
        );
        expect(isConflict(stale)).toBe(true);
        expect(await store.append(runId, events.slice(3), { expectedSeq: 3 })).toEqual({
          nextSeq: 4,
        });
        store = await closeAndReopen(store);
        expect(await store.read(runId)).toEqual(stored(events));
      });

      it("fences two instances open on the same data", async () => {
        const first = await create();
        const runId = newRunId("two_instances");
        await first.append(runId, [build.start(runId, 1)], { expectedSeq: 0 });
        const second = await reopen(first);
        open.add(second);
        await second.append(runId, [build.request(1, 2)], { expectedSeq: 1 });
        const error = await expectRejection(
          first.append(runId, [build.request(1, 3)], { expectedSeq: 1 }),
        );
        expect(isConflict(error), String(error)).toBe(true);
        expect(await first.append(runId, [build.response(1, 4, "ok")], { expectedSeq: 2 })).toEqual(
          { nextSeq: 3 },
        );
        expect(await second.read(runId)).toEqual(
          stored([build.start(runId, 1), build.request(1, 2), build.response(1, 4, "ok")]),
        );
      });
    });
  }

  if (reopen && corruptTail) {
    it("cuts off a torn last record on open, and appends after it", async () => {
      let store = await create();
      const runId = newRunId("torn");
      const events = smallRun(runId, 1);
      await store.append(runId, events.slice(0, 3), { expectedSeq: 0 });
      await store.close?.();
      await corruptTail(runId, store);
      store = await closeAndReopen(store);
      expect(await store.read(runId)).toEqual(stored(events.slice(0, 3)));
      expect(await store.append(runId, events.slice(3), { expectedSeq: 3 })).toEqual({
        nextSeq: 4,
      });
      expect(await store.read(runId)).toEqual(stored(events));
      store = await closeAndReopen(store);
      expect(await store.read(runId)).toEqual(stored(events));
      expect((await store.list()).find((summary) => summary.runId === runId)).toEqual(
        expectedSummary(runId, events),
      );
    });
  }

  if (reopen && corruptLine) {
    it("reports a corrupt record anywhere (middle or last) as CorruptLogError naming where, never skips it", async () => {
      for (const seq of [1, 3]) {
        let store = await create();
        const runId = newRunId(`corrupt${seq}`);
        await store.append(runId, smallRun(runId, 1), { expectedSeq: 0 });
        await store.close?.();
        const where = await corruptLine(runId, seq, store);
        store = await closeAndReopen(store);
        const error = await expectRejection(store.read(runId));
        expect(isCorrupt(error), String(error)).toBe(true);
        expect((error as Error).message).toContain(runId);
        if (where) expect((error as Error).message).toContain(where);
      }
    });
  }
}
