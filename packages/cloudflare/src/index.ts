export type { D1Database, D1PreparedStatement, D1Result } from "./d1-database.js";
export {
  type D1EventStore,
  type D1EventStoreOptions,
  d1EventStore,
  StoreClosedError,
} from "./d1-event-store.js";
export { RunLeaseLostError, RunLockedError } from "./d1-run-leases.js";
export { d1Schema } from "./d1-schema.js";
