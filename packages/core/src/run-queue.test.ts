import { describe, expect, it } from "vitest";
import {
  checkRunPriority,
  defaultMaxConcurrentRuns,
  RunQueue,
  resolveMaxConcurrentRuns,
} from "./run-queue.js";

describe("RunQueue", () => {
  it("admits up to its limit at once; the rest wait, higher priority first, first come first served within one", async () => {
    let clock = 0;
    const queue = new RunQueue(2, () => clock);
    const first = await queue.acquire();
    const second = await queue.acquire();
    expect([first.waitedMs, second.waitedMs]).toEqual([0, 0]);
    expect(queue.running).toBe(2);
    const order: string[] = [];
    const waiting = [
      ["low-1", -5],
      ["normal-1", 0],
      ["high", 10],
      ["normal-2", 0],
      ["low-2", -5],
    ].map(([name, priority]) =>
      queue.acquire(priority as number).then((slot) => {
        order.push(name as string);
        return slot;
      }),
    );
    expect(queue.waiting).toBe(5);
    clock = 100;
    first.release();
    first.release(); // twice: nothing more
    await Promise.resolve();
    expect(order).toEqual(["high"]);
    expect(queue.running).toBe(2);
    second.release();
    const slots = [await waiting[2]!];
    await Promise.resolve();
    expect(order).toEqual(["high", "normal-1"]);
    slots[0]!.release();
    (await waiting[1]!).release();
    (await waiting[3]!).release();
    (await waiting[0]!).release();
    const last = await waiting[4]!;
    expect(order).toEqual(["high", "normal-1", "normal-2", "low-1", "low-2"]);
    expect(last.waitedMs).toBe(100);
    last.release();
    expect(queue.running).toBe(0);
    expect(queue.waiting).toBe(0);
  });

  it("a waiter whose signal aborts leaves the queue with the signal's reason and takes no slot", async () => {
    const queue = new RunQueue(1);
    const held = await queue.acquire();
    const controller = new AbortController();
    const waiting = queue.acquire(0, controller.signal);
    controller.abort(new Error("client went away"));
    await expect(waiting).rejects.toThrow("client went away");
    expect(queue.waiting).toBe(0);
    held.release();
    expect(queue.running).toBe(0);
    const aborted = AbortSignal.abort(new Error("already"));
    await expect(queue.acquire(0, aborted)).rejects.toThrow("already");
    expect(queue.running).toBe(0);
  });

  it("checks maxConcurrentRuns and priority with clear [core] errors; the default comes from the machine", () => {
    expect(defaultMaxConcurrentRuns()).toBeGreaterThanOrEqual(64);
    expect(resolveMaxConcurrentRuns(undefined)).toBe(defaultMaxConcurrentRuns());
    expect(resolveMaxConcurrentRuns(3)).toBe(3);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "8", null])
      expect(() => resolveMaxConcurrentRuns(bad)).toThrow(
        /^\[core\] createAgent: maxConcurrentRuns must be a positive integer/,
      );
    expect(checkRunPriority(undefined)).toBe(0);
    expect(checkRunPriority(-7)).toBe(-7);
    for (const bad of [0.5, 2_000_000, Number.NaN, "1"])
      expect(() => checkRunPriority(bad)).toThrow(
        /^\[core\] agent\.run\(task, \{ priority \}\): priority must be an integer from -1000000 to 1000000/,
      );
  });
});
