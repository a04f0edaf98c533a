import { describe, expect, it } from "vitest";
import type { LimitStore } from "./contracts/limit-store.js";
import { limitBatch } from "./limit-batch.js";
import { memoryLimitStore } from "./memory-limit-store.js";
import { describeLimitStore } from "./testing/describe-limit-store.js";

await describeLimitStore({ name: "memoryLimitStore", create: () => memoryLimitStore() });

describe("limitBatch over a store without batch (one call each)", () => {
  const t0 = Date.parse("2026-12-01T00:00:00Z");
  const bucket = { capacity: 3, refillPerSecond: 1 };
  const day = { cap: 10, windowStart: t0, windowMs: 86_400_000 };
  const withoutBatch = () => {
    const { batch: _batch, ...rest } = memoryLimitStore();
    return rest as LimitStore;
  };

  it("applies every operation when all fit, and gives back what it applied when one is refused", async () => {
    const store = withoutBatch();
    const fits = await limitBatch(
      store,
      [
        { type: "take", key: "a", bucket },
        { type: "reserve", key: "usd", counter: day, amount: 4, id: "s1" },
      ],
      { now: t0 },
    );
    expect(fits.ok).toBe(true);
    await store.take("empty", bucket, { now: t0, count: 3 });
    const refused = await limitBatch(
      store,
      [
        { type: "settle", key: "usd", id: "s1", actual: 1 },
        { type: "take", key: "a", bucket },
        { type: "reserve", key: "usd", counter: day, amount: 5, id: "s2" },
        { type: "take", key: "empty", bucket },
        { type: "take", key: "a", bucket },
      ],
      { now: t0 },
    );
    expect(refused.ok).toBe(false);
    expect(refused.results.map((result) => result.ok)).toEqual([true, true, true, false, false]);
    // a: one token from the first batch only; usd: the settle stayed (1), s2 was given back.
    expect((await store.take("a", bucket, { now: t0, count: 2 })).ok).toBe(true);
    expect(await store.reserve("usd", day, 9, { id: "s3", now: t0 })).toEqual({
      ok: true,
      used: 10,
    });
    await expect(limitBatch(store, [], { now: t0 })).rejects.toThrow(/^\[core\] limitBatch batch/);
  });
});
