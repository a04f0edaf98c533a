import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventStore } from "@loopguard/core";
import { describeEventStore } from "@loopguard/core/testing";
import Database from "better-sqlite3";
import { sqliteEventStore } from "./sqlite-event-store.js";

const paths = new WeakMap<EventStore, string>();
const storeAt = (path: string) => {
  const store = sqliteEventStore({ path });
  paths.set(store, path);
  return store;
};

await describeEventStore({
  name: "sqliteEventStore",
  create: () => storeAt(join(mkdtempSync(join(tmpdir(), "lg-sqlite-")), "runs.db")),
  reopen: (previous) => storeAt(paths.get(previous)!),
  // SQLite commits are atomic: a crash mid-write leaves no torn record, so no corruptTail.
  corruptLine: (runId, seq, store) => {
    const db = new Database(paths.get(store)!);
    db.prepare(
      "UPDATE loopguard_events SET body = '{\"seq\":' || seq || ',garbage' WHERE run_id = ? AND seq = ?",
    ).run(runId, seq);
    db.close();
    return `run ${runId} event ${seq} (table loopguard_events)`;
  },
});
