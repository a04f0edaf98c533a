export type { VerifyResult } from "./hash-chain.js";
export type { JsonlEventStore, JsonlEventStoreOptions } from "./jsonl-event-store.js";
export { jsonlEventStore } from "./jsonl-event-store.js";
export type { MissingPeerErrorOptions } from "./missing-peer-error.js";
export { MissingDriverError, MissingPeerError } from "./missing-peer-error.js";
export { FencedError, PostgresStoreError } from "./postgres-errors.js";
export type {
  FencedEventStore,
  PostgresAppendOptions,
  PostgresEventStore,
  PostgresEventStoreOptions,
} from "./postgres-event-store.js";
export { postgresEventStore } from "./postgres-event-store.js";
export type {
  FreezeStatus as PostgresFreezeStatus,
  PostgresFreezeStore,
  PostgresFreezeStoreOptions,
} from "./postgres-freeze-store.js";
export { postgresFreezeStore } from "./postgres-freeze-store.js";
export type {
  LimitBucketRow,
  LimitCounterRow,
  PostgresLimitStore,
  PostgresLimitStoreOptions,
} from "./postgres-limit-store.js";
export { postgresLimitStore } from "./postgres-limit-store.js";
export type {
  PgClient,
  PgPool,
  PgQueryable,
  PgQueryConfig,
  PgQueryResult,
  PostgresConnectionOptions,
} from "./postgres-pool.js";
export { isValidRunId } from "./run-id.js";
export type {
  SqliteDatabase,
  SqliteEventStore,
  SqliteEventStoreOptions,
} from "./sqlite-event-store.js";
export { sqliteEventStore } from "./sqlite-event-store.js";
export {
  RunLockedError,
  StoreClosedError,
  StoreWriteError,
} from "./store-errors.js";
export type { SubmitRetryOptions } from "./submit-connections.js";
export { closeSubmitConnections } from "./submit-connections.js";
export { verifyRun } from "./verify-run.js";
export type {
  AgentFactory,
  SliceContext,
  SliceReport,
  Worker,
  WorkerOptions,
  WorkerStatus,
} from "./worker.js";
export { createWorker } from "./worker.js";
export type { QueueClient, RunJobData, RunQueueOptions } from "./worker-queue.js";
export type {
  ApproveRunOptions,
  RunQueueTarget,
  SubmitRunOptions,
  SubmitRunResult,
} from "./worker-submit-run.js";
export { approveQueuedRun, submitRun } from "./worker-submit-run.js";
