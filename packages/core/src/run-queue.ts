import { InvalidArgumentError } from "./errors.js";
import { notStartedResult, type RunResult } from "./run-result.js";
import { yieldIfBusy } from "./yield-if-busy.js";

/** A place in the run queue: give it back exactly once when the run's drive ends. */
export interface RunSlot {
  /** How long the run waited for its slot (ms). */
  readonly waitedMs: number;
  release(): void;
}

interface Waiter {
  priority: number;
  sequence: number;
  queuedAt: number;
  resolve: (slot: RunSlot) => void;
  reject: (reason: unknown) => void;
}

/** The highest priority a run may ask for (and the lowest, negated). */
export const maxRunPriority = 1_000_000;

/**
 * Admission control: at most `limit` runs advance at once; the others wait in a queue, higher
 * `priority` first, first come first served within a priority. Nothing here touches a run:
 * the agent takes a slot before it starts (or resumes) one and gives it back when its drive
 * ends, whatever way it ends.
 */
export class RunQueue {
  readonly limit: number;
  readonly #now: () => number;
  #running = 0;
  #sequence = 0;
  readonly #waiting: Waiter[] = [];

  constructor(limit: number, now: () => number = Date.now) {
    this.limit = limit;
    this.#now = now;
  }

  /** Runs holding a slot. */
  get running(): number {
    return this.#running;
  }

  /** Runs waiting for one. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Takes a slot, waiting for one if all are taken. Rejects with `signal`'s reason when it
   * aborts while waiting (the run never started).
   */
  acquire(priority = 0, signal?: AbortSignal): Promise<RunSlot> {
    const queuedAt = this.#now();
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#running < this.limit && this.#waiting.length === 0) {
      this.#running += 1;
      // Admitted at once: it waited 0 ms (reading the clock twice could straddle a millisecond).
      return Promise.resolve(this.#slot(undefined));
    }
    return new Promise<RunSlot>((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        sequence: this.#sequence++,
        queuedAt,
        resolve,
        reject,
      };
      this.#insert(waiter);
      signal?.addEventListener(
        "abort",
        () => {
          const index = this.#waiting.indexOf(waiter);
          if (index < 0) return;
          this.#waiting.splice(index, 1);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Keeps the queue ordered: priority (high first), then arrival. */
  #insert(waiter: Waiter): void {
    let index = this.#waiting.length;
    while (index > 0) {
      const before = this.#waiting[index - 1]!;
      if (before.priority >= waiter.priority) break;
      index -= 1;
    }
    this.#waiting.splice(index, 0, waiter);
  }

  #slot(queuedAt: number | undefined): RunSlot {
    let released = false;
    return {
      waitedMs: queuedAt === undefined ? 0 : Math.max(0, this.#now() - queuedAt),
      release: () => {
        if (released) return;
        released = true;
        const next = this.#waiting.shift();
        if (next) next.resolve(this.#slot(next.queuedAt));
        else this.#running -= 1;
      },
    };
  }
}

/**
 * The default number of runs an agent advances at once: 64 per CPU the runtime reports
 * (`navigator.hardwareConcurrency`, on Node 21+, Deno, Bun and browsers; `os.availableParallelism()`
 * on Node 20; 4 CPUs assumed where neither is there), at least 64. Runs mostly wait on the model, so many fit per CPU; past this
 * many, starting more only slows every run down (set-up, GC and the event loop are shared).
 */
export function defaultMaxConcurrentRuns(): number {
  const cpus = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator
    ?.hardwareConcurrency;
  const count = Number.isInteger(cpus) && (cpus as number) > 0 ? (cpus as number) : nodeCpus();
  return Math.max(64, 64 * count);
}

/**
 * The CPUs Node reports (`os.availableParallelism()`, through `process.getBuiltinModule` on
 * Node 20.16+, where `navigator.hardwareConcurrency` is missing), else 4.
 */
function nodeCpus(): number {
  try {
    const host = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } })
      .process;
    const os = host?.getBuiltinModule?.("node:os") as
      | { availableParallelism?: () => number }
      | undefined;
    const count = os?.availableParallelism?.();
    return Number.isInteger(count) && (count as number) > 0 ? (count as number) : 4;
  } catch {
    return 4;
  }
}

/** Checks `maxConcurrentRuns` and fills in the default. */
export function resolveMaxConcurrentRuns(value: unknown): number {
  if (value === undefined) return defaultMaxConcurrentRuns();
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
    throw new InvalidArgumentError(
      `[core] createAgent: maxConcurrentRuns must be a positive integer (runs advanced at once; default ${defaultMaxConcurrentRuns()} on this machine), got ${JSON.stringify(value)}`,
    );
  return value;
}

/** Checks a run's `priority`: an integer from -1,000,000 to 1,000,000 (default 0). */
export function checkRunPriority(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || Math.abs(value) > maxRunPriority)
    throw new InvalidArgumentError(
      `[core] agent.run(task, { priority }): priority must be an integer from -${maxRunPriority} to ${maxRunPriority} (higher runs are admitted first; default 0), got ${JSON.stringify(value)}`,
    );
  return value;
}

/**
 * Runs `work` (a run's start or resume, through its drive) once the queue admits it, and gives
 * the slot back when it ends; the result carries `queueWaitMs`. A signal that aborts while the
 * run waits ends it as `stopped` (`cancelled`) before anything ran.
 */
export async function admitted(
  queue: RunQueue,
  options: { priority?: number; signal?: AbortSignal },
  runId: string,
  work: (waitedMs: number) => Promise<RunResult>,
): Promise<RunResult> {
  const priority = checkRunPriority(options.priority);
  const queuedAt = Date.now();
  let slot: RunSlot;
  try {
    slot = await queue.acquire(priority, options.signal);
  } catch {
    return notStartedResult(
      runId,
      "cancelled",
      `[core] run ${runId} was cancelled while it waited ${Date.now() - queuedAt} ms for one of the agent's ${queue.limit} run slots (maxConcurrentRuns); nothing ran`,
    );
  }
  try {
    // A burst of starts (a thousand agent.stream() calls in one tick) is spread over turns of
    // the event loop: past a turn's slice, this start waits behind the runs already going.
    const pause = yieldIfBusy();
    if (pause) await pause;
    return { ...(await work(slot.waitedMs)), queueWaitMs: slot.waitedMs };
  } finally {
    slot.release();
  }
}
