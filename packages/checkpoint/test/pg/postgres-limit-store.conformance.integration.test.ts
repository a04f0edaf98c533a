import { describeLimitStore } from "@loopguard/core/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type PostgresLimitStore, postgresLimitStore } from "../../src/postgres-limit-store.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

// postgresLimitStore runs core's LimitStore conformance suite against a real PostgreSQL
// (skipped with a loud message when DATABASE_URL is not set; required under CI), then its own
// cases: two stores on one schema share limits, counters expire with their window, an
// unreachable database fails closed with a [checkpoint] error.

const schema = freshSchema("lg_limits_conf");
const stores: PostgresLimitStore[] = [];
const made = (options: Partial<Parameters<typeof postgresLimitStore>[0]> = {}) => {
  const store = postgresLimitStore({
    connectionString: databaseUrl!,
    schema,
    max: 4,
    ...options,
  } as Parameters<typeof postgresLimitStore>[0]);
  stores.push(store);
  return store;
};

if (databaseUrl) {
  afterAll(async () => {
    for (const store of stores) await store.close();
    await dropSchema(schema);
  });

  await describeLimitStore({ name: "postgresLimitStore", create: () => made() });

  describe("postgresLimitStore (fleet)", () => {
    const t0 = Date.parse("2026-12-01T00:00:00Z");

    it("two stores on one schema (two workers) share one bucket and one counter", async () => {
      const [a, b] = [made(), made()];
      const key = `shared:${Math.random()}`;
      const spec = { capacity: 20, refillPerSecond: 0.0001 };
      const results = await Promise.all(
        Array.from({ length: 60 }, (_unused, index) =>
          (index % 2 ? a : b).take(key, spec, { now: t0 }),
        ),
      );
      expect(results.filter((result) => result.ok)).toHaveLength(20);
      const day = { cap: 5, windowStart: t0, windowMs: 86_400_000 };
      const reserved = await Promise.all(
        Array.from({ length: 20 }, (_unused, index) =>
          (index % 2 ? a : b).reserve(`${key}:usd`, day, 0.5, { id: `r${index}`, now: t0 }),
        ),
      );
      expect(reserved.filter((result) => result.ok)).toHaveLength(10);
      const view = await a.inspect({ prefix: key, now: t0 });
      expect(view.buckets[0]?.tokens).toBeCloseTo(0, 6);
      expect(view.counters[0]).toMatchObject({
        cap: 5,
        reserved: 5,
        settled: 0,
        openReservations: 10,
      });
    });

    it("the same id asked for more (a taken-over step with a larger max_tokens) grows if it fits, else is refused", async () => {
      const store = made();
      const key = `grow:${Math.random()}`;
      const day = { cap: 1, windowStart: t0, windowMs: 86_400_000 };
      expect(await store.reserve(key, day, 0.2, { id: "step", now: t0 })).toEqual({
        ok: true,
        used: 0.2,
      });
      expect(await store.reserve(key, day, 0.5, { id: "other", now: t0 })).toEqual({
        ok: true,
        used: 0.7,
      });
      // Less than it holds: the same reservation.
      expect(await store.reserve(key, day, 0.1, { id: "step", now: t0 })).toEqual({
        ok: true,
        used: 0.7,
      });
      // More, and it fits: it grows.
      expect(await store.reserve(key, day, 0.4, { id: "step", now: t0 })).toEqual({
        ok: true,
        used: 0.9,
      });
      // More than fits: refused, and it keeps what it held.
      expect(await store.reserve(key, day, 0.6, { id: "step", now: t0 })).toEqual({
        ok: false,
        used: 0.9,
      });
      await store.settle(key, "step", 0.3, { now: t0 });
      expect((await store.inspect({ prefix: key, now: t0 })).counters[0]).toMatchObject({
        settled: 0.3,
        reserved: 0.5,
      });
    });

    it("counters expire with their window (prune drops them and their reservations)", async () => {
      const store = made();
      const key = `expire:${Math.random()}`;
      const window = { cap: 1, windowStart: t0, windowMs: 1000 };
      expect((await store.reserve(key, window, 1, { id: "a", now: t0 })).ok).toBe(true);
      expect((await store.inspect({ prefix: key, now: t0 })).counters).toHaveLength(1);
      expect((await store.inspect({ prefix: key, now: t0 + 1000 })).counters).toHaveLength(0);
      expect(await store.prune({ now: t0 + 1000 })).toBeGreaterThanOrEqual(2);
      // The id is free again once its window went.
      expect((await store.reserve(key, window, 1, { id: "a", now: t0 })).ok).toBe(true);
    });

    it("an unreachable PostgreSQL fails closed with a [checkpoint] error, never admits", async () => {
      const store = made({
        connectionString: "postgres://postgres@127.0.0.1:1/nowhere",
        timeoutMs: 500,
      });
      await expect(
        store.take("k", { capacity: 1, refillPerSecond: 1 }, { now: t0 }),
      ).rejects.toThrow(
        /\[checkpoint\] postgresLimitStore.take\("k"\): cannot reach PostgreSQL at 127\.0\.0\.1:1\/nowhere.*fails closed/,
      );
      await expect(
        store.reserve("k", { cap: 1, windowStart: t0, windowMs: 1 }, 1, { id: "x", now: t0 }),
      ).rejects.toThrow(/\[checkpoint\].*cannot reach PostgreSQL/);
    });

    it("bad options are refused at construction", () => {
      expect(() => made({ timeoutMs: -1 })).toThrow(/\[checkpoint\] postgresLimitStore: timeoutMs/);
      expect(() => postgresLimitStore({ schema: "x" } as never)).toThrow(
        /\[checkpoint\].*connectionString/,
      );
      expect(() => made({ schema: "Bad-Name" })).toThrow(/\[checkpoint\].*schema/);
    });
  });
}
