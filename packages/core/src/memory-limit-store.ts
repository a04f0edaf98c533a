import type {
  BatchResult,
  BucketSpec,
  CounterSpec,
  LimitOperation,
  LimitOperationResult,
  LimitStore,
  ReserveResult,
  TakeResult,
} from "./contracts/limit-store.js";
import { InvalidArgumentError } from "./errors.js";
import { checkLimitOperations } from "./limit-batch.js";
import { limitSpecs } from "./limit-specs.js";

interface Bucket {
  tokens: number;
  updatedMs: number;
  spec: BucketSpec;
}

interface Counter {
  windowEnd: number;
  settled: number;
  reservations: Map<string, number>;
}

/** Above this many buckets, full ones are dropped (a full bucket is the same as no bucket). */
const maxBuckets = 10_000;

/**
 * A LimitStore in this process's memory: the limits hold for one process only (use
 * `postgresLimitStore` from `@loopguard/checkpoint` for a fleet). JavaScript runs one callback
 * at a time, so every operation (and every `batch`) is atomic. Counters are dropped once their
 * window has passed.
 *
 * @example
 * const gate = rateLimit({ tool: "send_email", capacity: 5, refillPerSecond: 0.1 }, { store: memoryLimitStore() });
 */
export function memoryLimitStore(): LimitStore {
  const buckets = bucketState();
  const counters = counterState();
  const apply = (operation: LimitOperation, now: number): LimitOperationResult => {
    switch (operation.type) {
      case "take":
        return {
          type: "take",
          ...buckets.take(operation.key, operation.bucket, now, countOf(operation.count)),
        };
      case "reserve":
        return {
          type: "reserve",
          ...counters.reserve(
            operation.key,
            operation.counter,
            operation.amount,
            operation.id,
            now,
          ),
        };
      default:
        counters.settle(operation.key, operation.id, operation.actual, now);
        return { type: "settle", ok: true };
    }
  };
  return {
    name: "memory",
    async take(key, spec, options): Promise<TakeResult> {
      return buckets.take(key, spec, nowOf(options.now), countOf(options.count));
    },
    async refund(key, spec, options) {
      buckets.refund(key, spec, nowOf(options.now), countOf(options.count));
    },
    async reserve(key, spec, amount, options): Promise<ReserveResult> {
      checkKey(key);
      checkCounter(spec);
      if (typeof amount !== "number" || !Number.isFinite(amount) || amount < 0)
        throw new InvalidArgumentError(
          `[core] limit store reserve: amount must be a finite number >= 0, got ${String(amount)}`,
        );
      if (typeof options?.id !== "string" || options.id === "")
        throw new InvalidArgumentError(
          "[core] limit store reserve: options.id must be a non-empty string",
        );
      return counters.reserve(key, spec, amount, options.id, nowOf(options.now));
    },
    async settle(key, id, actual, options) {
      checkKey(key);
      if (typeof actual !== "number" || !Number.isFinite(actual) || actual < 0)
        throw new InvalidArgumentError(
          `[core] limit store settle: actual must be a finite number >= 0, got ${String(actual)}`,
        );
      counters.settle(key, id, actual, nowOf(options.now));
    },
    // One callback: atomic in JavaScript. A refused batch puts the state back, then settles.
    async batch(operations, options): Promise<BatchResult> {
      checkLimitOperations(operations, "[core] limit store");
      const now = nowOf(options?.now);
      // Whole-state copies: a batch on a store with many keys costs their copy, once.
      const saved = { buckets: buckets.snapshot(), counters: counters.snapshot() };
      const results = operations.map((operation) => apply(operation, now));
      const ok = results.every((result) => result.ok);
      if (!ok) {
        buckets.restore(saved.buckets);
        counters.restore(saved.counters);
        for (const operation of operations) if (operation.type === "settle") apply(operation, now);
      }
      return { ok, results };
    },
    async close() {},
  };
}

/** The token buckets of a memory store. */
function bucketState() {
  let buckets = new Map<string, Bucket>();
  const refill = (bucket: Bucket, spec: BucketSpec, now: number) => {
    if (now > bucket.updatedMs) {
      bucket.tokens = Math.min(
        spec.capacity,
        bucket.tokens + ((now - bucket.updatedMs) / 1000) * spec.refillPerSecond,
      );
      bucket.updatedMs = now;
    }
    // A capacity lowered since the last take applies at once.
    if (bucket.tokens > spec.capacity) bucket.tokens = spec.capacity;
  };
  const bucketOf = (key: string, spec: BucketSpec, now: number): Bucket => {
    checkKey(key);
    checkBucket(spec);
    let bucket = buckets.get(key);
    if (!bucket) {
      if (buckets.size >= maxBuckets) {
        for (const [other, candidate] of buckets) {
          refill(candidate, candidate.spec, now);
          if (candidate.tokens >= candidate.spec.capacity) buckets.delete(other);
        }
      }
      bucket = { tokens: spec.capacity, updatedMs: now, spec };
      buckets.set(key, bucket);
    }
    bucket.spec = spec;
    refill(bucket, spec, now);
    return bucket;
  };
  return {
    take(key: string, spec: BucketSpec, now: number, count: number): TakeResult {
      const bucket = bucketOf(key, spec, now);
      if (bucket.tokens >= count) {
        bucket.tokens -= count;
        return { ok: true, remaining: bucket.tokens, retryAfterMs: 0 };
      }
      return {
        ok: false,
        remaining: bucket.tokens,
        retryAfterMs: Math.ceil(((count - bucket.tokens) / spec.refillPerSecond) * 1000),
      };
    },
    refund(key: string, spec: BucketSpec, now: number, count: number): void {
      const bucket = bucketOf(key, spec, now);
      bucket.tokens = Math.min(spec.capacity, bucket.tokens + count);
    },
    snapshot: () => new Map([...buckets].map(([key, bucket]) => [key, { ...bucket }])),
    restore(saved: Map<string, Bucket>): void {
      buckets = saved;
    },
  };
}

/** The windowed counters of a memory store, and which counter holds each reservation. */
function counterState() {
  let counters = new Map<string, Counter>();
  let owners = new Map<string, string>();
  const expire = (now: number) => {
    for (const [name, counter] of counters) {
      if (counter.windowEnd <= now) {
        counters.delete(name);
        // Owners are keyed by the counter's key (its name without the window start).
        const key = name.slice(0, name.lastIndexOf("\u0000"));
        for (const id of counter.reservations.keys()) owners.delete(`${key}\u0000${id}`);
      }
    }
  };
  const used = (counter: Counter): number => {
    let total = counter.settled;
    for (const amount of counter.reservations.values()) total += amount;
    return total;
  };
  return {
    reserve(
      key: string,
      spec: CounterSpec,
      amount: number,
      id: string,
      now: number,
    ): ReserveResult {
      expire(now);
      const name = `${key}\u0000${spec.windowStart}`;
      let counter = counters.get(name);
      if (!counter) {
        counter = {
          windowEnd: spec.windowStart + spec.windowMs,
          settled: 0,
          reservations: new Map(),
        };
        counters.set(name, counter);
      }
      if (counter.reservations.has(id)) return { ok: true, used: used(counter) };
      const before = used(counter);
      if (before + amount > spec.cap) return { ok: false, used: before };
      counter.reservations.set(id, amount);
      owners.set(`${key}\u0000${id}`, name);
      return { ok: true, used: before + amount };
    },
    settle(key: string, id: string, actual: number, now: number): void {
      expire(now);
      const name = owners.get(`${key}\u0000${id}`);
      const counter = name === undefined ? undefined : counters.get(name);
      if (!counter?.reservations.has(id)) return;
      counter.reservations.delete(id);
      owners.delete(`${key}\u0000${id}`);
      counter.settled += actual;
    },
    snapshot: () => ({
      counters: new Map(
        [...counters].map(([name, counter]) => [
          name,
          { ...counter, reservations: new Map(counter.reservations) },
        ]),
      ),
      owners: new Map(owners),
    }),
    restore(saved: { counters: Map<string, Counter>; owners: Map<string, string> }): void {
      counters = saved.counters;
      owners = saved.owners;
    },
  };
}

function checkKey(key: string): void {
  if (typeof key !== "string" || key === "")
    throw new InvalidArgumentError("[core] limit store: key must be a non-empty string");
}

function checkBucket(spec: BucketSpec): void {
  limitSpecs.bucket(spec, "[core] limit store");
}

function checkCounter(spec: CounterSpec): void {
  limitSpecs.counter(spec, "[core] limit store");
}

function countOf(count: number | undefined): number {
  return limitSpecs.count(count, "[core] limit store");
}

function nowOf(now: number): number {
  return limitSpecs.now(now, "[core] limit store");
}
