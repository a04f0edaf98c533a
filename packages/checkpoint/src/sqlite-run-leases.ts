import type { RunLease } from "@loopguard/core";
import type BetterSqlite3 from "better-sqlite3";
import { holderIsGone, markHeld, newHolder } from "./file-lock.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { RunLockedError } from "./store-errors.js";

type TakeOutcome = { taken: true } | { taken: false; holder: string };

/**
 * The lease concern of the SQLite store: a resume holds its run's row in `loopguard_leases`
 * (naming the holder's process and host) until it releases it; a row whose holder is gone
 * (its process died) is taken over. Acquiring rejects with `RunLockedError` after
 * `leaseTimeoutMs` while another live holder has the run, or with SQLite's error.
 */
export class SqliteRunLeases {
  readonly #where: string;
  readonly #take: BetterSqlite3.Transaction<(runId: string, holder: string) => TakeOutcome>;
  readonly #drop: BetterSqlite3.Statement<[string, string]>;

  constructor(connection: SqliteConnection) {
    const { db, where } = connection;
    this.#where = where;
    const leaseOf = db.prepare<[string], { holder: string }>(
      "SELECT holder FROM loopguard_leases WHERE run_id = ?",
    );
    const putLease = db.prepare<[string, string]>(
      "INSERT INTO loopguard_leases (run_id, holder) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder",
    );
    this.#drop = db.prepare<[string, string]>(
      "DELETE FROM loopguard_leases WHERE run_id = ? AND holder = ?",
    );
    this.#take = db.transaction((runId: string, holder: string): TakeOutcome => {
      const current = leaseOf.get(runId)?.holder;
      if (current !== undefined) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(current);
        } catch {
          parsed = undefined;
        }
        if (!holderIsGone(parsed)) return { taken: false as const, holder: current };
      }
      putLease.run(runId, holder);
      return { taken: true as const };
    });
  }

  /**
   * Takes run `runId`, retrying on a backoff (2 ms doubling to 50 ms) for up to
   * `leaseTimeoutMs`; `release()` gives it back unless `isClosed()` says the database is gone.
   */
  async acquire(runId: string, leaseTimeoutMs: number, isClosed: () => boolean): Promise<RunLease> {
    const holder = newHolder();
    const text = JSON.stringify(holder);
    const where = `the row of run ${runId} in table loopguard_leases of ${this.#where}`;
    const started = Date.now();
    let delayMs = 2;
    for (;;) {
      markHeld(holder.token, true);
      const outcome = this.#take.immediate(runId, text);
      if (outcome.taken) break;
      markHeld(holder.token, false);
      const waited = Date.now() - started;
      if (waited >= leaseTimeoutMs) {
        let shown = "another resumer";
        try {
          const other = JSON.parse(outcome.holder) as { pid?: number; host?: string };
          shown = `process ${other.pid} on ${other.host}`;
        } catch {
          // An unreadable holder is still a holder.
        }
        throw new RunLockedError(where, `${shown} (resuming run ${runId})`, waited);
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 50);
    }
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        markHeld(holder.token, false);
        if (!isClosed()) this.#drop.run(runId, text);
      },
    };
  }
}
