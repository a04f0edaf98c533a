/**
 * One lease: the worker's `leaseMs` governs every slice, the first one included, whatever
 * lease the submitter asked for. The queue takes the worker's lease when the worker starts,
 * and a job sent with another lease is held to the worker's when the worker takes it.
 */
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { createWorker } from "../../src/worker.js";
import { submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

describe.skipIf(!databaseUrl)("the worker's lease governs every slice", () => {
  const schema = freshSchema("lg_lease");
  afterAll(async () => {
    await dropSchema(schema);
    await dropSchema(`${schema}_boss`);
  });

  it("holds a job submitted with a 30 s lease to the worker's 2 s, and sets the queue's", async () => {
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
    // The submitter comes first, with its own idea of the lease: it creates the queue.
    await submitRun({ store, leaseMs: 30_000 }, "wait for the test", { runId: "lease-1" });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const inTool = new Promise<void>((resolve) => {
      started = resolve;
    });
    const wait = tool({
      name: "wait",
      description: "Waits until the test lets it go.",
      input: v.object({}),
      run: async () => {
        started();
        await released;
        return "done";
      },
    });
    const worker = createWorker({
      store,
      leaseMs: 2_000,
      sliceMs: 1_000,
      pollingIntervalMs: 500,
      agent: (view) =>
        createAgent({
          store: view,
          tools: [wait],
          model: scriptedModel([
            { content: [{ type: "tool_use", id: "toolu_1", name: "wait", input: {} }] },
            { content: "finished" },
          ]),
        }),
    });
    await worker.start();
    try {
      await inTool;
      const pool = await store.pool();
      const queue = await pool.query(
        `SELECT expire_seconds FROM "${schema}_boss".queue WHERE name = 'loopguard-runs'`,
      );
      expect(Number(queue.rows[0]?.expire_seconds)).toBe(2);
      const job = await pool.query(
        `SELECT EXTRACT(epoch FROM expire_in) AS seconds FROM "${schema}_boss".job WHERE singleton_key = 'lease-1' AND state = 'active'`,
      );
      expect(job.rows.map((row) => Number(row.seconds))).toEqual([2]);
    } finally {
      release();
      await worker.stop();
      await store.close();
    }
  }, 600_000);
});
