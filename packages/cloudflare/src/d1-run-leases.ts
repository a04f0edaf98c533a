import { LoopguardError, type RunLease } from "@loopguard/core";
import type { D1Database } from "./d1-database.js";

/** Another holder has the run (a second resumer): code `run_locked`. */
export class RunLockedError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.RunLockedError";
  constructor(runId: string, waitedMs: number) {
    super(
      "run_locked",
      `[cloudflare] run ${runId} is being resumed elsewhere (its lease in loopguard_leases is held); waited ${waitedMs} ms: try again when that resume ends, or after the lease expires`,
    );
  }
}

/** This store's lease on a run was taken over after it expired: code `run_lease_lost`. */
export class RunLeaseLostError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.RunLeaseLostError";
  constructor(runId: string) {
    super(
      "run_lease_lost",
      `[cloudflare] the lease on run ${runId} expired and another resumer took it: this one stops before running a tool (raise leaseTtlMs if a step can take that long)`,
    );
  }
}

/** How leases behave. */
export interface LeaseSettings {
  /** How long `acquireRun` waits for another holder, in ms (0: one attempt). */
  waitMs: number;
  /** How long a lease lasts without a `confirmOwner` renewing it, in ms. */
  ttlMs: number;
  now: () => number;
}

/**
 * Run leases in `loopguard_leases (run_id, holder, expires_at)`: one holder per run, taken with
 * one conditional upsert (free, or expired), renewed by `confirmOwner` before each tool runs,
 * given back by `release`. A holder that died (an isolate evicted mid-run) blocks the run until
 * its lease expires.
 */
export class D1RunLeases {
  readonly #database: D1Database;
  readonly #settings: LeaseSettings;
  /** The holder id of each run this store holds. */
  readonly #held = new Map<string, string>();

  constructor(database: D1Database, settings: LeaseSettings) {
    this.#database = database;
    this.#settings = settings;
  }

  async acquire(runId: string): Promise<RunLease> {
    const holder = globalThis.crypto.randomUUID();
    const started = this.#settings.now();
    for (let attempt = 0; ; attempt++) {
      const now = this.#settings.now();
      const taken = await this.#database
        .prepare(
          "INSERT INTO loopguard_leases (run_id, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE loopguard_leases.expires_at <= ? RETURNING holder",
        )
        .bind(runId, holder, now + this.#settings.ttlMs, now)
        .first<{ holder: string }>();
      if (taken?.holder === holder) break;
      const waited = now - started;
      if (waited >= this.#settings.waitMs) throw new RunLockedError(runId, waited);
      await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** attempt, 1_000)));
    }
    this.#held.set(runId, holder);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        if (this.#held.get(runId) === holder) this.#held.delete(runId);
        await this.#database
          .prepare("DELETE FROM loopguard_leases WHERE run_id = ? AND holder = ?")
          .bind(runId, holder)
          .run();
      },
    };
  }

  /** Renews this store's lease on the run, or throws when it was taken over; no lease, no-op. */
  async confirm(runId: string): Promise<void> {
    const holder = this.#held.get(runId);
    if (holder === undefined) return;
    const result = await this.#database
      .prepare("UPDATE loopguard_leases SET expires_at = ? WHERE run_id = ? AND holder = ?")
      .bind(this.#settings.now() + this.#settings.ttlMs, runId, holder)
      .run();
    if ((result.meta?.changes ?? 0) !== 1) {
      this.#held.delete(runId);
      throw new RunLeaseLostError(runId);
    }
  }
}
