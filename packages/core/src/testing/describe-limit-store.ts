/**
 * The LimitStore conformance suite. Every limit store runs it first, then its own cases.
 * vitest is loaded lazily (see `loadSuite`).
 */
import type { LimitStore } from "../contracts/limit-store.js";
import { loadSuite } from "./load-suite.js";

/** What `describeLimitStore` needs to know about a store under test. */
export interface LimitStoreSuiteOptions {
  /** The name of the `describe` block, e.g. `memoryLimitStore`. */
  name: string;
  /** A fresh, empty store (a new schema per call for a database). */
  create: () => LimitStore | Promise<LimitStore>;
}

let keyCounter = 0;
const keyOf = (label: string) =>
  `${label}:${process.pid}:${++keyCounter}:${Math.random().toString(36).slice(2, 8)}`;

/**
 * Registers the LimitStore conformance cases: buckets start full, take never overdraws (also
 * under concurrent takes), refill follows the clock, refunds cap at capacity, reservations
 * hold under concurrency, are idempotent by id, settle to the actual amount, and counters of
 * another window are other counters. A store with `batch` also gets its cases: several takes
 * and a reserve in one call, all or nothing (settles always applied), also under concurrency;
 * `limitBatch` (the fallback for stores without it) is checked by core's own tests.
 *
 * @example
 * await describeLimitStore({ name: "memoryLimitStore", create: () => memoryLimitStore() });
 */
export async function describeLimitStore(options: LimitStoreSuiteOptions): Promise<void> {
  const vitest = await loadSuite("describeLimitStore", options, "nothing else");
  const { afterEach, describe } = vitest;
  const open = new Set<LimitStore>();
  const create = async () => {
    const store = await options.create();
    open.add(store);
    return store;
  };
  afterEach(async () => {
    for (const store of open) await store.close?.();
    open.clear();
  });

  describe(`${options.name} (LimitStore conformance)`, () => {
    bucketCases(vitest, create);
    counterCases(vitest, create);
    batchCases(vitest, create);
  });
}

type Vitest = Awaited<ReturnType<typeof loadSuite>>;
const bucket = { capacity: 3, refillPerSecond: 1 };
const t0 = Date.parse("2026-12-01T00:00:00Z");

/** Token buckets: full at first, never overdrawn (also concurrently), refilled by the clock, refunds capped. */
function bucketCases(vitest: Vitest, create: () => Promise<LimitStore>): void {
  const { expect, it } = vitest;
  it("has a name", async () => {
    const store = await create();
    expect(typeof store.name).toBe("string");
    expect(store.name.length).toBeGreaterThan(0);
  });

  it("a new bucket is full; take never overdraws; the refusal says when to retry", async () => {
    const store = await create();
    const key = keyOf("bucket");
    const taken = [];
    for (let index = 0; index < 4; index += 1)
      taken.push(await store.take(key, bucket, { now: t0 }));
    expect(taken.map((result) => result.ok)).toEqual([true, true, true, false]);
    expect(taken[2]!.remaining).toBeCloseTo(0, 6);
    expect(taken[3]!.retryAfterMs).toBe(1000);
    expect((await store.take(key, bucket, { now: t0, count: 2 })).ok).toBe(false);
  });

  it("refills with the clock, never above capacity", async () => {
    const store = await create();
    const key = keyOf("refill");
    for (let index = 0; index < 3; index += 1) await store.take(key, bucket, { now: t0 });
    expect((await store.take(key, bucket, { now: t0 + 999 })).ok).toBe(false);
    expect((await store.take(key, bucket, { now: t0 + 1000 })).ok).toBe(true);
    const later = await store.take(key, bucket, { now: t0 + 3_600_000 });
    expect(later.ok).toBe(true);
    expect(later.remaining).toBeCloseTo(2, 6);
  });

  it("refunds give tokens back, capped at capacity", async () => {
    const store = await create();
    const key = keyOf("refund");
    await store.take(key, bucket, { now: t0, count: 3 });
    await store.refund(key, bucket, { now: t0 });
    expect((await store.take(key, bucket, { now: t0 })).ok).toBe(true);
    await store.refund(key, bucket, { now: t0, count: 10 });
    const after = await store.take(key, bucket, { now: t0 });
    expect(after.remaining).toBeCloseTo(2, 6);
  });

  it("concurrent takes on one key never admit more than the bucket holds", async () => {
    const store = await create();
    const key = keyOf("race");
    const spec = { capacity: 10, refillPerSecond: 0.001 };
    const results = await Promise.all(
      Array.from({ length: 50 }, () => store.take(key, spec, { now: t0 })),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(10);
  });

  it("keys are independent", async () => {
    const store = await create();
    const [a, b] = [keyOf("a"), keyOf("b")];
    await store.take(a, bucket, { now: t0, count: 3 });
    expect((await store.take(b, bucket, { now: t0, count: 3 })).ok).toBe(true);
  });
}

/** Windowed counters: reservations under the cap, one per id, settled; windows apart; bad input refused. */
function counterCases(vitest: Vitest, create: () => Promise<LimitStore>): void {
  const { expect, it } = vitest;
  it("reservations fit under the cap, are one per id, and settle to the actual amount", async () => {
    const store = await create();
    const key = keyOf("budget");
    const day = { cap: 10, windowStart: t0, windowMs: 86_400_000 };
    expect(await store.reserve(key, day, 6, { id: "r1", now: t0 })).toEqual({
      ok: true,
      used: 6,
    });
    expect(await store.reserve(key, day, 6, { id: "r1", now: t0 })).toEqual({
      ok: true,
      used: 6,
    });
    expect(await store.reserve(key, day, 5, { id: "r2", now: t0 })).toEqual({
      ok: false,
      used: 6,
    });
    await store.settle(key, "r1", 2, { now: t0 });
    expect(await store.reserve(key, day, 5, { id: "r2", now: t0 })).toEqual({
      ok: true,
      used: 7,
    });
    await store.settle(key, "r2", 0, { now: t0 });
    await store.settle(key, "r2", 9, { now: t0 });
    await store.settle(key, "unknown", 9, { now: t0 });
    expect(await store.reserve(key, day, 8, { id: "r3", now: t0 })).toEqual({
      ok: true,
      used: 10,
    });
  });

  it("concurrent reservations never cross the cap", async () => {
    const store = await create();
    const key = keyOf("budget-race");
    const day = { cap: 10, windowStart: t0, windowMs: 86_400_000 };
    const results = await Promise.all(
      Array.from({ length: 30 }, (_unused, index) =>
        store.reserve(key, day, 1, { id: `r${index}`, now: t0 }),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(10);
  });

  it("another window is another counter", async () => {
    const store = await create();
    const key = keyOf("window");
    const day = 86_400_000;
    expect(
      (
        await store.reserve(key, { cap: 1, windowStart: t0, windowMs: day }, 1, {
          id: "a",
          now: t0,
        })
      ).ok,
    ).toBe(true);
    expect(
      (
        await store.reserve(key, { cap: 1, windowStart: t0, windowMs: day }, 1, {
          id: "b",
          now: t0,
        })
      ).ok,
    ).toBe(false);
    expect(
      (
        await store.reserve(key, { cap: 1, windowStart: t0 + day, windowMs: day }, 1, {
          id: "c",
          now: t0 + day,
        })
      ).ok,
    ).toBe(true);
  });

  it("bad input is refused with a clear error, never admitted", async () => {
    const store = await create();
    await expect(store.take("", bucket, { now: t0 })).rejects.toThrow(/key/);
    await expect(
      store.take(keyOf("x"), { capacity: 0, refillPerSecond: 1 }, { now: t0 }),
    ).rejects.toThrow(/capacity/);
    await expect(
      store.take(keyOf("x"), { capacity: 1, refillPerSecond: Number.NaN }, { now: t0 }),
    ).rejects.toThrow(/refillPerSecond/);
    await expect(
      store.reserve(
        keyOf("x"),
        { cap: Number.POSITIVE_INFINITY, windowStart: t0, windowMs: 1 },
        1,
        { id: "a", now: t0 },
      ),
    ).rejects.toThrow(/cap/);
    await expect(
      store.reserve(keyOf("x"), { cap: 1, windowStart: t0, windowMs: 1 }, -1, {
        id: "a",
        now: t0,
      }),
    ).rejects.toThrow(/amount/);
  });

  it("close() is safe to call twice", async () => {
    const store = await create();
    await store.close?.();
    await store.close?.();
  });
}

/** `batch`: all or nothing for takes and reserves, settles always applied, atomic under concurrency. */
function batchCases(vitest: Vitest, create: () => Promise<LimitStore>): void {
  const { expect, it } = vitest;
  const day = { cap: 10, windowStart: t0, windowMs: 86_400_000 };
  it("batch: several takes and a reserve in one call, applied together when all fit", async () => {
    const store = await create();
    if (!store.batch) return;
    const [a, b, budget] = [keyOf("batch-a"), keyOf("batch-b"), keyOf("batch-usd")];
    const result = await store.batch(
      [
        { type: "take", key: a, bucket },
        { type: "take", key: b, bucket, count: 2 },
        { type: "reserve", key: budget, counter: day, amount: 4, id: "s1" },
      ],
      { now: t0 },
    );
    expect(result.ok).toBe(true);
    expect(result.results.map((item) => [item.type, item.ok])).toEqual([
      ["take", true],
      ["take", true],
      ["reserve", true],
    ]);
    expect(result.results[1]).toMatchObject({ remaining: expect.closeTo(1, 6) });
    expect(result.results[2]).toMatchObject({ used: 4 });
    expect((await store.take(a, bucket, { now: t0 })).remaining).toBeCloseTo(1, 6);
    expect((await store.take(b, bucket, { now: t0, count: 2 })).ok).toBe(false);
    expect(await store.reserve(budget, day, 7, { id: "s2", now: t0 })).toEqual({
      ok: false,
      used: 4,
    });
  });

  it("batch: one refusal applies none of the takes and reserves, and says which was refused", async () => {
    const store = await create();
    if (!store.batch) return;
    const [a, empty, budget] = [keyOf("batch-a"), keyOf("batch-empty"), keyOf("batch-usd")];
    await store.take(empty, bucket, { now: t0, count: 3 });
    const result = await store.batch(
      [
        { type: "take", key: a, bucket, count: 2 },
        { type: "reserve", key: budget, counter: day, amount: 5, id: "s1" },
        { type: "take", key: empty, bucket },
      ],
      { now: t0 },
    );
    expect(result.ok).toBe(false);
    expect(result.results.map((item) => item.ok)).toEqual([true, true, false]);
    expect(result.results[2]).toMatchObject({ type: "take", retryAfterMs: 1000 });
    // Nothing was applied: bucket a is full, the counter holds nothing.
    expect((await store.take(a, bucket, { now: t0, count: 3 })).ok).toBe(true);
    expect(await store.reserve(budget, day, 10, { id: "s9", now: t0 })).toEqual({
      ok: true,
      used: 10,
    });
  });

  it("batch: a settle applies even when the reserve after it is refused; settle then reserve on one key sees the settle", async () => {
    const store = await create();
    if (!store.batch) return;
    const budget = keyOf("batch-usd");
    await store.reserve(budget, day, 8, { id: "step1", now: t0 });
    // The settle frees 6 (8 held, 2 spent): the next step's 7 fits only after it.
    const fits = await store.batch(
      [
        { type: "settle", key: budget, id: "step1", actual: 2 },
        { type: "reserve", key: budget, counter: day, amount: 7, id: "step2" },
      ],
      { now: t0 },
    );
    expect(fits).toEqual({
      ok: true,
      results: [
        { type: "settle", ok: true },
        { type: "reserve", ok: true, used: 9 },
      ],
    });
    const refused = await store.batch(
      [
        { type: "settle", key: budget, id: "step2", actual: 7 },
        { type: "reserve", key: budget, counter: day, amount: 2, id: "step3" },
      ],
      { now: t0 },
    );
    expect(refused.ok).toBe(false);
    expect(refused.results[1]).toEqual({ type: "reserve", ok: false, used: 9 });
    // The settle stayed: 9 spent, nothing held.
    expect(await store.reserve(budget, day, 1, { id: "step4", now: t0 })).toEqual({
      ok: true,
      used: 10,
    });
  });

  it("batch: concurrent batches never overdraw a bucket or cross a cap, and each is all or nothing", async () => {
    const store = await create();
    if (!store.batch) return;
    const [tokens, budget] = [keyOf("batch-race"), keyOf("batch-race-usd")];
    const spec = { capacity: 8, refillPerSecond: 0.001 };
    const cap = { cap: 5, windowStart: t0, windowMs: 86_400_000 };
    const results = await Promise.all(
      Array.from({ length: 30 }, (_unused, index) =>
        store.batch!(
          [
            { type: "take", key: tokens, bucket: spec },
            { type: "reserve", key: budget, counter: cap, amount: 1, id: `r${index}` },
          ],
          { now: t0 },
        ),
      ),
    );
    const admitted = results.filter((result) => result.ok).length;
    expect(admitted).toBe(5);
    // Each admitted batch took one token; refused ones took none.
    const left = await store.take(tokens, spec, { now: t0, count: 3 });
    expect(left.ok).toBe(true);
    expect(left.remaining).toBeCloseTo(0, 3);
  });

  it("batch: bad operations are refused before anything is applied", async () => {
    const store = await create();
    if (!store.batch) return;
    const a = keyOf("batch-bad");
    await expect(store.batch([], { now: t0 })).rejects.toThrow(/non-empty array/);
    await expect(
      store.batch(
        [
          { type: "take", key: a, bucket },
          { type: "drop" as "take", key: a, bucket },
        ],
        { now: t0 },
      ),
    ).rejects.toThrow(/operations\[1\]: type must be "take", "reserve" or "settle"/);
    await expect(
      store.batch([{ type: "reserve", key: a, counter: day, amount: -1, id: "x" }], { now: t0 }),
    ).rejects.toThrow(/operations\[0\]: amount must be a finite number >= 0/);
    expect((await store.take(a, bucket, { now: t0, count: 3 })).ok).toBe(true);
  });
}
