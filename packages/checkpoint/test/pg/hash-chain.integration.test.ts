/**
 * The tamper-evident log on PostgreSQL: edited, deleted and cut rows are caught by verifyRun
 * (naming the first bad seq) and an edited row is refused by read, so by resume; with a key,
 * a row forged with a recomputed plain link is refused.
 */
import { retryLog } from "@loopguard/core/testing";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { link } from "../../src/hash-chain.js";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { verifyRun } from "../../src/verify-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

describe.skipIf(!databaseUrl)("postgres: a tamper-evident log", () => {
  const schema = freshSchema("lg_chain");
  afterAll(() => dropSchema(schema));

  it("names the first bad seq of an edit, a deletion, a cut and a keyed forgery", async () => {
    const key = "a-test-log-key-of-32-characters!";
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const s = `"${schema}"`;
    try {
      const cases: Array<[string, (runId: string) => Promise<unknown>, number, string?]> = [
        [
          "edit",
          (runId) =>
            client.query(
              `UPDATE ${s}.events SET body = replace(body, '"step":1', '"step":2') WHERE run_id = $1 AND seq = 2`,
              [runId],
            ),
          2,
        ],
        [
          "delete",
          (runId) => client.query(`DELETE FROM ${s}.events WHERE run_id = $1 AND seq = 3`, [runId]),
          3,
        ],
        [
          "cut",
          (runId) =>
            client.query(`DELETE FROM ${s}.events WHERE run_id = $1 AND seq >= 4`, [runId]),
          4,
        ],
        [
          "forge",
          async (runId) => {
            const { rows } = await client.query(
              `SELECT seq, body, chain FROM ${s}.events WHERE run_id = $1 AND seq IN (4, 5) ORDER BY seq`,
              [runId],
            );
            const body = (rows[1].body as string).replace('"m4"', '"forged"');
            const chain = link(rows[0].chain, `{"seq":5,${body.slice(1)}`, undefined);
            await client.query(
              `UPDATE ${s}.events SET body = $2, chain = $3 WHERE run_id = $1 AND seq = 5`,
              [runId, body, chain],
            );
            await client.query(`UPDATE ${s}.runs SET head = $2 WHERE run_id = $1`, [runId, chain]);
          },
          5,
          key,
        ],
      ];
      for (const [name, tamper, firstBad, logKey] of cases) {
        const runId = `chain-${name}`;
        const store = postgresEventStore({
          connectionString: databaseUrl!,
          schema,
          max: 2,
          ...(logKey ? { logKey } : {}),
        });
        await store.append(runId, retryLog(runId, 6), { expectedSeq: 0 });
        expect(await verifyRun(store, runId)).toMatchObject({
          ok: true,
          events: 6,
          chain: logKey ? "hmac" : "sha256",
        });
        // Read in pages, the events are the same as one read.
        const paged = [];
        for await (const batch of store.readBatches(runId, { batchSize: 4 })) paged.push(...batch);
        expect(paged).toEqual(await store.read(runId));
        await tamper(runId);
        const result = await verifyRun(store, runId);
        expect(result.ok, name).toBe(false);
        if (!result.ok) expect(result.firstBadSeq, name).toBe(firstBad);
        if (name === "edit" || name === "forge")
          await expect(store.read(runId)).rejects.toThrow(/event \d+ \(table/);
        await store.close();
      }
    } finally {
      await client.end();
    }
  }, 600_000);
});
