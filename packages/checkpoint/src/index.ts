export type { JsonlEventStore, JsonlEventStoreOptions } from "./jsonl-event-store.js";
export { jsonlEventStore } from "./jsonl-event-store.js";
export { isValidRunId } from "./run-id.js";
export type {
  SqliteDatabase,
  SqliteEventStore,
  SqliteEventStoreOptions,
} from "./sqlite-event-store.js";
export { sqliteEventStore } from "./sqlite-event-store.js";
export {
  MissingDriverError,
  RunLockedError,
  StoreClosedError,
  StoreWriteError,
} from "./store-errors.js";
