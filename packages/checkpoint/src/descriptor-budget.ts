/**
 * A cap on the file descriptors the JSONL store opens, so thousands of concurrent runs never
 * run a process out of them (`EMFILE`). Descriptors come in two kinds, each with its own slots
 * so neither can starve the other into a deadlock:
 *
 * - **held**: a run's open log, kept between appends. When every held slot is taken, the least
 *   recently used log that no append is using is closed (its run keeps its lock: a lock file
 *   holds no descriptor), and reopened at its next append.
 * - **brief**: everything opened and closed within one step (a lock file being created, a
 *   summary file, a read, a directory fsync). Nothing waits for a held slot while holding one.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { StoreWriteError } from "./store-errors.js";

/** A counter of slots with a FIFO of waiters. */
class Slots {
  used = 0;
  readonly #waiters: Array<() => void> = [];
  constructor(readonly size: number) {}
  /** Takes a slot now if one is free. */
  tryTake(): boolean {
    if (this.used >= this.size) return false;
    this.used += 1;
    return true;
  }
  /** Waits for a slot (handed over by `give`, so nobody can jump the queue). */
  wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
  give(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.used -= 1;
  }
  get waiting(): number {
    return this.#waiters.length;
  }
}

/** A descriptor a held slot can take back: an idle run's open log. */
export interface Evictable {
  /** Closes the descriptor; the slot is given back by the budget once it resolves. */
  evict(): Promise<void>;
}

/** The process's soft limit on open files (`ulimit -n`), or undefined when it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const line = limits.split("\n").find((row) => row.startsWith("Max open files"));
    const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
    if (soft === "unlimited") return Number.POSITIVE_INFINITY;
    if (soft !== undefined && /^\d+$/.test(soft)) return Number(soft);
  } catch {
    // Not Linux: ask the shell once.
  }
  if (process.platform === "win32") return undefined;
  try {
    const soft = execFileSync("/bin/sh", ["-c", "ulimit -n"], {
      encoding: "utf8",
      timeout: 2_000,
    }).trim();
    if (soft === "unlimited") return Number.POSITIVE_INFINITY;
    if (/^\d+$/.test(soft)) return Number(soft);
  } catch {
    // No shell: the default below.
  }
  return undefined;
}

/**
 * How many descriptors the JSONL stores of a process may open at once by default: half the
 * soft limit (the other half is left to sockets, the model client, other libraries), at most
 * 4 096 and at least 16. 256 when the limit cannot be read.
 */
export function defaultDescriptorCap(limit: number | undefined): number {
  if (limit === undefined) return 256;
  return Math.max(16, Math.min(4_096, Math.floor(limit / 2)));
}

/** Whether an error means the process or the system ran out of descriptors. */
export function isOutOfDescriptors(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "EMFILE" || code === "ENFILE";
}

/** The descriptor budget of one or more JSONL stores. */
export class DescriptorBudget {
  readonly cap: number;
  readonly #held: Slots;
  readonly #brief: Slots;
  /** Open, idle logs: least recently used first. */
  readonly #idle = new Map<object, Evictable>();
  /** The most held descriptors open at once, for benches. */
  peakHeld = 0;

  constructor(cap: number) {
    this.cap = cap;
    const brief = Math.max(4, Math.floor(cap / 4));
    this.#held = new Slots(Math.max(1, cap - brief));
    this.#brief = new Slots(brief);
  }

  /** Descriptors open now (held and brief). */
  get open(): number {
    return this.#held.used + this.#brief.used;
  }

  /**
   * Takes a held slot for a log about to be opened, closing the least recently used idle log
   * when none is free, or waiting for one.
   */
  async takeHeld(): Promise<void> {
    if (this.#held.tryTake()) return this.#peak();
    const oldest = this.#idle.entries().next();
    if (!oldest.done) {
      const [key, idle] = oldest.value;
      this.#idle.delete(key);
      // The evicted log's slot passes straight to this caller.
      await idle.evict().catch(() => undefined);
      return;
    }
    await this.#held.wait();
  }

  /** Gives back a held slot (its log was closed, not evicted). */
  giveHeld(): void {
    this.#held.give();
  }

  /**
   * Marks an open log idle (evictable), or busy again when `idle` is undefined. `evict()` must
   * forget the descriptor synchronously (so the next append reopens it) and then close it; the
   * budget gives its slot on.
   */
  setIdle(key: object, idle: Evictable | undefined): void {
    this.#idle.delete(key);
    if (!idle) return;
    // Someone waits for a held slot: this idle log's goes to them now.
    if (this.#held.waiting > 0) void this.#handOver(idle);
    else this.#idle.set(key, idle);
  }

  /**
   * Runs `work`, which opens and closes descriptors within itself, under a brief slot.
   * Out-of-descriptor errors (other code in the process took them) are retried after closing
   * idle logs, then reported as a `StoreWriteError` that says what to do.
   */
  async brief<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (!this.#brief.tryTake()) await this.#brief.wait();
    try {
      return await this.retrying(what, work);
    } finally {
      this.#brief.give();
    }
  }

  /** Retries `open` while the process is out of descriptors, closing idle logs first. */
  async retrying<T>(what: string, open: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await open();
      } catch (error) {
        if (!isOutOfDescriptors(error)) throw error;
        if (attempt >= 6) throw this.outOfDescriptors(what, error);
        await this.#evictIdle(Math.max(1, Math.ceil(this.#idle.size / 2)));
        await new Promise((resolve) => setTimeout(resolve, 5 * 2 ** attempt));
      }
    }
  }

  /** The error for a process that stayed out of descriptors. */
  outOfDescriptors(what: string, cause: unknown): StoreWriteError {
    const limit = openFileLimit();
    return new StoreWriteError(
      `[checkpoint] ${what}: the process is out of file descriptors (${(cause as NodeJS.ErrnoException).code}) although the JSONL store keeps at most ${this.cap} open (${this.open} now) of a limit of ${limit ?? "unknown"}: something else in the process holds the rest. Raise the limit (ulimit -n ${limit !== undefined && Number.isFinite(limit) ? limit * 4 : 4096}), or lower jsonlEventStore({ maxOpenFiles }); nothing of this append was written`,
      { cause },
    );
  }

  async #evictIdle(count: number): Promise<void> {
    const victims: Evictable[] = [];
    for (const [key, idle] of this.#idle) {
      if (victims.length >= count) break;
      this.#idle.delete(key);
      victims.push(idle);
    }
    await Promise.all(victims.map((idle) => this.#handOver(idle)));
  }

  /** Closes an idle log and gives its slot on (to a waiter, or back to the pool). */
  async #handOver(idle: Evictable): Promise<void> {
    await idle.evict().catch(() => undefined);
    this.#held.give();
  }

  #peak(): void {
    if (this.#held.used > this.peakHeld) this.peakHeld = this.#held.used;
  }
}

let shared: DescriptorBudget | undefined;

/** The budget every JSONL store of the process shares unless given `maxOpenFiles`. */
export function sharedDescriptorBudget(): DescriptorBudget {
  shared ??= new DescriptorBudget(defaultDescriptorCap(openFileLimit()));
  return shared;
}
