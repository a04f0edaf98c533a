import {
  childRunId,
  InvalidArgumentError,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import type { PostgresAppender } from "./postgres-appender.js";
import { FencedError } from "./postgres-errors.js";
import type { PostgresLogReader } from "./postgres-log-reader.js";
import type { PgPool } from "./postgres-pool.js";
import type { FencedEventStore, TenantSlotRequest } from "./postgres-store-types.js";
import { assertRunId } from "./run-id.js";

/** What `PostgresClaims` needs from the store that composes it. */
export interface PostgresClaimsSettings {
  /** The schema quoted for SQL. */
  quoted: string;
  /** The pool, migrated (opened on first use). */
  ready: () => Promise<PgPool>;
  /** Names of the prepared statements. */
  names: { claim: string; claimRead: string; claimReadSlot: string };
  appender: PostgresAppender;
  reader: PostgresLogReader;
}

/**
 * The lease concern of the PostgreSQL store: fencing epochs. `claim` raises a run's epoch, so
 * every writer holding an older one is refused from then on; `fenced` hands out a store view
 * bound to one run and epoch. Rejects with `InvalidArgumentError` for a bad run id or epoch,
 * `FencedError` when a view's epoch is no longer the run's, or the driver's error.
 */
export class PostgresClaims {
  readonly #settings: PostgresClaimsSettings;

  constructor(settings: PostgresClaimsSettings) {
    this.#settings = settings;
  }

  /** Raises the run's epoch and returns the new one. */
  async claim(runId: string): Promise<number> {
    assertRunId(runId, "postgresEventStore.claim");
    const { quoted: s } = this.#settings;
    const pool = await this.#settings.ready();
    const { rows } = await pool.query({
      name: this.#settings.names.claim,
      text: `INSERT INTO ${s}.runs (run_id, epoch) VALUES ($1, 1) ON CONFLICT (run_id) DO UPDATE SET epoch = ${s}.runs.epoch + 1 RETURNING epoch`,
      values: [runId],
    });
    return Number(rows[0]!.epoch);
  }

  /** Claims the run and reads its log in one round trip. */
  async claimAndRead(runId: string): Promise<{ epoch: number; events: StoredEvent[] }> {
    assertRunId(runId, "postgresEventStore.claimAndRead");
    const { quoted: s } = this.#settings;
    const pool = await this.#settings.ready();
    // The claim returns the row's latest version (it waits for an append holding the row
    // lock), but the join reads the events as of the statement's start: if an append committed
    // in between, the counts differ and the log is read again, after the claim.
    const { rows } = await pool.query({
      name: this.#settings.names.claimRead,
      text: `WITH claimed AS (
         INSERT INTO ${s}.runs (run_id, epoch) VALUES ($1, 1)
         ON CONFLICT (run_id) DO UPDATE SET epoch = ${s}.runs.epoch + 1
         RETURNING epoch, next_seq
       )
       SELECT claimed.epoch, claimed.next_seq, e.seq, e.body, e.chain
       FROM claimed LEFT JOIN ${s}.events e ON e.run_id = $1
       ORDER BY e.seq`,
      values: [runId],
    });
    return this.#claimed(runId, rows);
  }

  /**
   * Takes the run's tenant slot and, only when it is granted, claims the run and reads its log:
   * one statement (one transaction), so the slot and the claim are taken together or not at
   * all. The slot function runs first (a CTE the claim's INSERT reads); refused, it claims
   * nothing and returns epoch 0.
   */
  async claimAndReadWithSlot(
    runId: string,
    slot: TenantSlotRequest,
  ): Promise<{ epoch: number; events: StoredEvent[] }> {
    assertRunId(runId, "postgresEventStore.claimAndReadWithSlot");
    const { quoted: s } = this.#settings;
    const pool = await this.#settings.ready();
    const { rows } = await pool.query({
      name: this.#settings.names.claimReadSlot,
      text: `WITH slot AS MATERIALIZED (
         SELECT ${s}.lg_tenant_slot_acquire($2, $1, $3, $4, $5) AS ok
       ), claimed AS (
         INSERT INTO ${s}.runs (run_id, epoch) SELECT $1, 1 FROM slot WHERE slot.ok
         ON CONFLICT (run_id) DO UPDATE SET epoch = ${s}.runs.epoch + 1
         RETURNING epoch, next_seq
       )
       SELECT claimed.epoch, claimed.next_seq, e.seq, e.body, e.chain
       FROM slot LEFT JOIN claimed ON true
       LEFT JOIN ${s}.events e ON claimed.epoch IS NOT NULL AND e.run_id = $1
       ORDER BY e.seq`,
      values: [runId, slot.tenant, slot.holder, slot.limit, slot.ttlMs],
    });
    if (rows[0]?.epoch === null || rows[0]?.epoch === undefined) return { epoch: 0, events: [] };
    return this.#claimed(runId, rows);
  }

  /** The claim's epoch and the log its rows hold (read again when an append landed meanwhile). */
  async #claimed(
    runId: string,
    rows: Array<Record<string, unknown>>,
  ): Promise<{ epoch: number; events: StoredEvent[] }> {
    const { reader } = this.#settings;
    const first = rows[0]!;
    const epoch = Number(first.epoch);
    const nextSeq = Number(first.next_seq);
    const eventRows = first.seq === null ? [] : rows;
    if (eventRows.length === nextSeq) return { epoch, events: reader.parseRows(runId, eventRows) };
    return { epoch, events: await reader.read(runId) };
  }

  /** The run's current epoch (0 when it was never claimed). */
  async epochOf(runId: string): Promise<number> {
    assertRunId(runId, "postgresEventStore.epochOf");
    const pool = await this.#settings.ready();
    const { rows } = await pool.query(
      `SELECT epoch FROM ${this.#settings.quoted}.runs WHERE run_id = $1`,
      [runId],
    );
    return Number(rows[0]?.epoch ?? 0);
  }

  /** A view of the store whose appends to `runId` are fenced by `epoch`. */
  fenced(runId: string, epoch: number): FencedEventStore {
    assertRunId(runId, "postgresEventStore.fenced");
    if (!Number.isInteger(epoch) || epoch < 1) {
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.fenced(${runId}, epoch): epoch must be a positive integer returned by claim(runId), got ${JSON.stringify(epoch)}`,
      );
    }
    const { appender, reader } = this.#settings;
    return {
      name: "postgres",
      runId,
      epoch,
      append(target, events, appendOptions) {
        // A child run's first event (an asTool call handing its child to another job): the
        // run-start of a run whose id derives from this run and one of its calls, written once.
        if (target !== runId && startsChildOf(runId, target, events, appendOptions?.expectedSeq))
          return appender.append(target, events, { expectedSeq: 0 });
        if (target !== runId) {
          return Promise.reject(
            new InvalidArgumentError(
              `[checkpoint] this store view is fenced to run ${runId} (epoch ${epoch}); it cannot append to run ${target} (a child run of an asTool call runs as a job of its own on workers: pass the slice's childRunner to createAgent)`,
            ),
          );
        }
        return appender.append(target, events, { expectedSeq: appendOptions?.expectedSeq, epoch });
      },
      read: (target) => reader.read(target),
      readBatches: (target, batchOptions) => reader.readBatches(target, batchOptions),
      list: (filter) => reader.list(filter),
      confirmOwner: async (target) => {
        if (target !== runId)
          throw new InvalidArgumentError(
            `[checkpoint] this store view is fenced to run ${runId} (epoch ${epoch}); it cannot vouch for run ${target}`,
          );
        const currentEpoch = await this.epochOf(runId);
        if (currentEpoch !== epoch) {
          const next = appender.nextSeqOf(runId);
          const error = new FencedError(runId, epoch, currentEpoch, next, next);
          error.message = `[checkpoint] run ${runId}: a tool was about to run, but this writer holds epoch ${epoch} and the run was claimed again (epoch ${currentEpoch}); another worker owns it now, so this one executes nothing more`;
          throw error;
        }
      },
      // The view shares the parent's pool: closing it must not close the parent.
      async close() {},
    };
  }
}

/**
 * Whether an append is the `run-start` of a child run of `runId`: one event, at seq 0, whose
 * `parent` names `runId` and a call from which `target` derives (`childRunId`).
 */
function startsChildOf(
  runId: string,
  target: string,
  events: readonly StoredEventInput[],
  expectedSeq: number | undefined,
): boolean {
  if (expectedSeq !== 0 || events.length !== 1) return false;
  const start = events[0]!;
  if (start.type !== "run-start" || start.parent?.runId !== runId) return false;
  try {
    return childRunId(runId, start.parent.callId) === target;
  } catch {
    return false;
  }
}
