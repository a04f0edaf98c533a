import { describeEventStore } from "@loopguard/core/testing";
import { Miniflare } from "miniflare";
import { afterAll } from "vitest";
import type { D1Database } from "./d1-database.js";
import { type D1EventStore, d1EventStore } from "./d1-event-store.js";

// A real D1 binding: workerd's D1 (SQLite) through miniflare, driven from Node. Each store gets
// its own database; reopening is a new store on the same binding.
const miniflares: Miniflare[] = [];
afterAll(async () => {
  await Promise.all(miniflares.map((miniflare) => miniflare.dispose()));
});

const bindings = new WeakMap<D1EventStore, D1Database>();
let databases = 0;

async function freshDatabase(): Promise<D1Database> {
  databases += 1;
  const miniflare = new Miniflare({
    modules: true,
    script: "export default { fetch: () => new Response('') };",
    d1Databases: { DB: `loopguard-test-${databases}` },
    compatibilityDate: "2026-04-01",
  });
  miniflares.push(miniflare);
  return (await miniflare.getD1Database("DB")) as unknown as D1Database;
}

const storeOn = (database: D1Database) => {
  const store = d1EventStore({ database });
  bindings.set(store, database);
  return store;
};

await describeEventStore({
  name: "d1EventStore",
  create: async () => storeOn(await freshDatabase()),
  reopen: (previous) => storeOn(bindings.get(previous as D1EventStore)!),
  // D1 batches are transactions: a crash leaves no torn record, so no corruptTail.
  corruptLine: async (runId, seq, store) => {
    const database = bindings.get(store as D1EventStore)!;
    await database
      .prepare(
        "UPDATE loopguard_events SET body = '{\"seq\":' || seq || ',garbage' WHERE run_id = ? AND seq = ?",
      )
      .bind(runId, seq)
      .run();
    return `run ${runId} event ${seq} (table loopguard_events)`;
  },
});
