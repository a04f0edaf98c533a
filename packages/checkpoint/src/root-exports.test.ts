import { describe, expect, it } from "vitest";
import * as root from "./index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change, or put it behind a subpath.
describe("@loopguard/checkpoint's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "FencedError",
      "MissingDriverError",
      "MissingPeerError",
      "PostgresStoreError",
      "RunLockedError",
      "StoreClosedError",
      "StoreWriteError",
      "approveQueuedRun",
      "closeSubmitConnections",
      "createWorker",
      "isValidRunId",
      "jsonlEventStore",
      "postgresEventStore",
      "postgresFreezeStore",
      "postgresLimitStore",
      "sqliteEventStore",
      "submitRun",
      "verifyRun",
    ]);
  });
});
