/**
 * The tenant slot and the claim in one statement (`claimAndReadWithSlot`): at the cap nothing is
 * claimed (the run's epoch does not move, no row is made), under it both are taken; a takeover
 * of the same run renews its slot for the new worker; the release statement a slice runs in
 * its closing transaction removes only its holder's slot, whatever the tenant's characters.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { escapeLiteral, tenantSlots } from "../../src/worker-tenant-slots.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

describe.skipIf(!databaseUrl)("claimAndReadWithSlot", () => {
  const schema = freshSchema("lg_slot_claim");
  const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
  afterAll(async () => {
    await store.close();
    await dropSchema(schema);
  });

  const slotRows = async (tenant: string) => {
    const pool = await store.pool();
    const { rows } = await pool.query(
      `SELECT run_id, holder FROM "${schema}".tenant_slots WHERE tenant = $1 ORDER BY run_id`,
      [tenant],
    );
    return rows.map((row) => `${row.run_id}@${row.holder}`);
  };

  it("claims only with the slot, renews it on a takeover, and releases only the holder's", async () => {
    await store.migrate();
    const pool = await store.pool();
    const slots = await tenantSlots(pool, schema, () => 1, 60_000);
    for (const tenant of ["acme", "o'neil\\co"]) {
      const first = await store.claimAndReadWithSlot("r1", slots.request(tenant, "r1", "w1"));
      expect(first).toEqual({ epoch: first.epoch, events: [] });
      expect(first.epoch).toBeGreaterThan(0);
      // At the cap (1): refused, and the run is not claimed.
      const before = await store.epochOf("r2");
      expect(await store.claimAndReadWithSlot("r2", slots.request(tenant, "r2", "w2"))).toEqual({
        epoch: 0,
        events: [],
      });
      expect(await store.epochOf("r2")).toBe(before);
      expect(await slotRows(tenant)).toEqual(["r1@w1"]);
      // Another worker takes the same run over: its slot is renewed for that worker.
      const again = await store.claimAndReadWithSlot("r1", slots.request(tenant, "r1", "w2"));
      expect(again.epoch).toBe(first.epoch + 1);
      expect(await slotRows(tenant)).toEqual(["r1@w2"]);
      // The old holder's release (in its closing transaction) removes nothing; the holder's does.
      await pool.query(`BEGIN; ${slots.releaseStatement(tenant, "r1", "w1")}; COMMIT`);
      expect(await slotRows(tenant)).toEqual(["r1@w2"]);
      await pool.query(`BEGIN; ${slots.releaseStatement(tenant, "r1", "w2")}; COMMIT`);
      expect(await slotRows(tenant)).toEqual([]);
      const granted = await store.claimAndReadWithSlot("r2", slots.request(tenant, "r2", "w2"));
      expect(granted.epoch).toBe(before + 1);
      await slots.release(tenant, "r2", "w2");
    }
  });

  it("escapes a literal as pg does, so it reads back as the same text", async () => {
    const client = new pg.Client({ connectionString: databaseUrl! });
    await client.connect();
    try {
      for (const value of ["plain", "o'neil", "back\\slash", "both'\\'", "", "ünï😀", "a\nb"]) {
        expect(escapeLiteral(value)).toBe(client.escapeLiteral(value));
        const { rows } = await client.query(`SELECT ${escapeLiteral(value)} AS text`);
        expect(rows[0].text).toBe(value);
      }
    } finally {
      await client.end();
    }
  });
});
