import type { BucketSpec, CounterSpec } from "./contracts/limit-store.js";
import { InvalidArgumentError } from "./errors.js";

/**
 * The argument checks every LimitStore makes (the memory one here, PostgreSQL's in
 * `@loopguard/checkpoint`), so each refuses the same input with the same words. `prefix` names
 * the store in the message, e.g. `"[core] limit store"`.
 */
export const limitSpecs = {
  bucket(spec: BucketSpec, prefix: string): void {
    if (
      spec === null ||
      typeof spec !== "object" ||
      !Number.isInteger(spec.capacity) ||
      spec.capacity < 1 ||
      typeof spec.refillPerSecond !== "number" ||
      !Number.isFinite(spec.refillPerSecond) ||
      spec.refillPerSecond <= 0
    )
      throw new InvalidArgumentError(
        `${prefix}: a bucket needs a positive integer capacity and a positive finite refillPerSecond, got ${JSON.stringify(spec)}`,
      );
  },
  counter(spec: CounterSpec, prefix: string): void {
    if (
      spec === null ||
      typeof spec !== "object" ||
      typeof spec.cap !== "number" ||
      !Number.isFinite(spec.cap) ||
      spec.cap < 0 ||
      !Number.isFinite(spec.windowStart) ||
      !Number.isFinite(spec.windowMs) ||
      spec.windowMs <= 0
    )
      throw new InvalidArgumentError(
        `${prefix}: a counter needs a finite cap >= 0, a finite windowStart and a positive windowMs, got ${JSON.stringify(spec)}`,
      );
  },
  /** A take's or refund's count: 1 when absent, else a positive integer. */
  count(count: number | undefined, prefix: string): number {
    if (count === undefined) return 1;
    if (!Number.isInteger(count) || count < 1)
      throw new InvalidArgumentError(
        `${prefix}: count must be a positive integer, got ${String(count)}`,
      );
    return count;
  },
  /** A `now` given to a store: finite epoch milliseconds. */
  now(now: number | undefined, prefix: string): number {
    if (typeof now !== "number" || !Number.isFinite(now))
      throw new InvalidArgumentError(
        `${prefix}: now must be epoch milliseconds, got ${String(now)}`,
      );
    return now;
  },
};
