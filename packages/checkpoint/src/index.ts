export type { JsonlEventStore, JsonlEventStoreOptions } from "./jsonl-event-store.js";
export { jsonlEventStore } from "./jsonl-event-store.js";
export { isValidRunId } from "./run-id.js";
export {
  MissingDriverError,
  RunLockedError,
  StoreClosedError,
  StoreWriteError,
} from "./store-errors.js";
