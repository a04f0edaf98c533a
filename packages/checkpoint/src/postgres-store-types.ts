import type {
  AppendOptions,
  AppendResult,
  EventStore,
  StoredEvent,
  StoredEventInput,
} from "@loopguard/core";
import type { VerifyResult } from "./hash-chain.js";
import type { PgPool, PostgresConnectionOptions } from "./postgres-pool.js";

/** Options of `postgresEventStore`: a pool or a connection string, a schema name, the log key. */
export interface PostgresEventStoreOptions extends PostgresConnectionOptions {
  /** The key of the log's HMAC chain. Default: `LOOPGUARD_LOG_KEY`; without either, SHA-256. */
  logKey?: string | Buffer;
  /** Chains new events (default true). `false` only to measure what the chain costs. */
  hashChain?: boolean;
}

/** Options of one append to the PostgreSQL store. */
export interface PostgresAppendOptions extends AppendOptions {
  /**
   * The fencing epoch the writer holds (from `claim`). When set, the append is refused with
   * `FencedError` unless it is still the run's epoch, checked in the insert's transaction.
   */
  epoch?: number;
}

/** An EventStore bound to one run and one fencing epoch: what a worker hands its agent. */
export interface FencedEventStore extends EventStore {
  readonly runId: string;
  readonly epoch: number;
  /**
   * Rejects with `FencedError` unless `epoch` is still the run's epoch (one indexed read).
   * Core calls it right before each tool runs, so a worker that was paused past its lease
   * and lost its claim executes nothing when it wakes.
   */
  confirmOwner(runId: string): Promise<void>;
}

/** The EventStore on PostgreSQL, with fencing epochs for multi-worker runs. */
export interface PostgresEventStore extends EventStore {
  readonly name: "postgres";
  /** The schema the tables live in. */
  readonly schema: string;
  /** The pool the store uses (opened on first use). */
  pool(): Promise<PgPool>;
  /** Creates the schema and applies pending migrations (done on first use anyway). */
  migrate(): Promise<void>;
  /** Appends events; with `epoch`, only while the writer's claim stands. */
  append(
    runId: string,
    events: readonly StoredEventInput[],
    options: PostgresAppendOptions,
  ): Promise<AppendResult>;
  /**
   * Claims a run: raises its fencing epoch and returns the new one. Every writer holding an
   * older epoch is fenced off from that moment: its next fenced append is refused.
   */
  claim(runId: string): Promise<number>;
  /**
   * Claims a run and reads its log in one round trip: what a worker does at the start of every
   * slice. `events` is the whole log as of the claim (empty for a run that has none yet).
   */
  claimAndRead(runId: string): Promise<{ epoch: number; events: StoredEvent[] }>;
  /**
   * For workers with `tenantConcurrency`: takes the run's tenant slot, then (only when it was
   * granted) claims the run and reads its log, in one statement, so a slot is never held
   * without a claim nor a claim made past the cap. `{ epoch: 0, events: [] }` when the tenant
   * is at its cap (nothing claimed). Needs the slot function `createWorker` creates in the
   * store's schema.
   */
  claimAndReadWithSlot(
    runId: string,
    slot: TenantSlotRequest,
  ): Promise<{ epoch: number; events: StoredEvent[] }>;
  /** The run's current epoch (0 when it was never claimed). */
  epochOf(runId: string): Promise<number>;
  /** A view of the store whose appends to `runId` are fenced by `epoch`. */
  fenced(runId: string, epoch: number): FencedEventStore;
  /**
   * Checks a run's log end to end: every row's seq and JSON, the hash chain (each link, with
   * the key when one is set), and the head kept in the run's row (a log cut short). Never
   * throws for a damaged log: the result names the first bad seq and why.
   */
  verify(runId: string): Promise<VerifyResult>;
  /**
   * Reads a run's log in order, `batchSize` events at a time (default 1 000), one keyset page
   * query each, checking the chain across pages.
   */
  readBatches(runId: string, options?: { batchSize?: number }): AsyncIterable<StoredEvent[]>;
  /** Ends the pool when the store opened it; safe to call twice. */
  close(): Promise<void>;
}

/** The tenant slot a worker asks for with its claim (`claimAndReadWithSlot`). */
export interface TenantSlotRequest {
  tenant: string;
  /** The worker taking the slot (only it releases it). */
  holder: string;
  /** The tenant's cap: slots held at once, fleet-wide. */
  limit: number;
  /** How long the slot lasts when never released (its worker died), on the database's clock. */
  ttlMs: number;
}
