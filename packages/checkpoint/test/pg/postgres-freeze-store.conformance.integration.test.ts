import type { FreezeStore } from "@loopguard/core";
import { describeFreezeStore } from "@loopguard/core/testing";
import pg from "pg";
import { afterAll } from "vitest";
import { type PostgresFreezeStore, postgresFreezeStore } from "../../src/postgres-freeze-store.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

// postgresFreezeStore runs core's FreezeStore conformance suite against a real PostgreSQL
// (skipped with a loud message when DATABASE_URL is not set; required under CI).

const schemas = new Map<FreezeStore, string>();
const made = (schema: string) => {
  const store = postgresFreezeStore({ connectionString: databaseUrl!, schema, cacheMs: 50 });
  schemas.set(store, schema);
  return store;
};

if (databaseUrl) {
  afterAll(async () => {
    for (const schema of new Set(schemas.values())) await dropSchema(schema);
  });
  await describeFreezeStore({
    name: "postgresFreezeStore",
    create: () => made(freshSchema("lg_freeze_conf")),
    second: (first) => made(schemas.get(first)!),
    propagationMs: 50,
    corrupt: async (store) => {
      // The table is gone: status() cannot tell, so it must reject, not report "not frozen".
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(`DROP TABLE "${schemas.get(store)!}".freeze`);
      } finally {
        await client.end();
      }
    },
    close: (store) => (store as PostgresFreezeStore).close(),
  });
}
