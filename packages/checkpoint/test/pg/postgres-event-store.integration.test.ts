import {
  AppendConflictError,
  createAgent,
  type EventStore,
  InvalidArgumentError,
  type RunEvent,
  type StoredEventInput,
  tool,
} from "@loopguard/core";
import { foldRun } from "@loopguard/core/plugin";
import * as testing from "@loopguard/core/testing";
import { describeEventStore } from "@loopguard/core/testing";
import fc from "fast-check";
import pg from "pg";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { link } from "../../src/hash-chain.js";
import { FencedError } from "../../src/postgres-errors.js";
import { type PostgresEventStore, postgresEventStore } from "../../src/postgres-event-store.js";
import { postgresFreezeStore } from "../../src/postgres-freeze-store.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

const start = (runId: string, at = 1_000): StoredEventInput => ({
  type: "run-start",
  runId,
  agentId: "agent",
  task: "a task",
  model: "claude-sonnet-5-5",
  maxTokens: 100,
  budget: {},
  policyDigest: "p",
  toolDigest: "t",
  at,
});
const end = (at: number): StoredEventInput => ({
  type: "run-end",
  status: "completed",
  answer: "done",
  why: "end_turn",
  at,
});

describe.skipIf(!databaseUrl)("postgresEventStore", async () => {
  const schemas: string[] = [];
  const stores: PostgresEventStore[] = [];
  const fresh = (schema = freshSchema("lg_store")) => {
    schemas.push(schema);
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    stores.push(store);
    return store;
  };
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    for (const schema of schemas) await dropSchema(schema);
  });

  // Core's conformance suite first, on a fresh schema per store.
  const schemaOf = new WeakMap<EventStore, string>();
  await describeEventStore({
    name: "postgresEventStore (conformance)",
    create: () => {
      const store = fresh();
      schemaOf.set(store, store.schema);
      return store;
    },
    reopen: (previous) => {
      const store = fresh(schemaOf.get(previous)!);
      schemaOf.set(store, store.schema);
      return store;
    },
    corruptLine: async (runId, seq, store) => {
      const schema = schemaOf.get(store)!;
      const client = new pg.Client({ connectionString: databaseUrl! });
      await client.connect();
      await client.query(
        `UPDATE "${schema}".events SET body = '{"seq":' || seq || ',garbage' WHERE run_id = $1 AND seq = $2`,
        [runId, seq],
      );
      await client.end();
      return `run ${runId} event ${seq}`;
    },
  });

  describe("the EventStore contract", () => {
    let store: PostgresEventStore;
    beforeAll(() => {
      store = fresh();
    });

    it("appends, reads back in order and rejects a stale expectedSeq with AppendConflictError", async () => {
      expect(await store.read("r1")).toEqual([]);
      expect(await store.append("r1", [start("r1")], { expectedSeq: 0 })).toEqual({ nextSeq: 1 });
      const conflict = await store
        .append("r1", [end(2_000)], { expectedSeq: 0 })
        .catch((error: unknown) => error);
      expect(AppendConflictError.isInstance(conflict)).toBe(true);
      expect(conflict).toMatchObject({ code: "append_conflict", expectedSeq: 0, actualSeq: 1 });
      expect(await store.append("r1", [end(2_000)], { expectedSeq: 1 })).toEqual({ nextSeq: 2 });
      const events = await store.read("r1");
      expect(events.map((event) => [event.seq, event.type])).toEqual([
        [0, "run-start"],
        [1, "run-end"],
      ]);
      expect(foldRun(events, "r1").status).toBe("completed");
    });

    it("keeps summaries for list in the same transaction, newest first, with filters", async () => {
      await store.append("l1", [start("l1", 10_000)], { expectedSeq: 0 });
      await store.append("l2", [start("l2", 20_000)], { expectedSeq: 0 });
      await store.append("l2", [end(30_000)], { expectedSeq: 1 });
      const listed = await store.list({ updatedAfter: 5_000 });
      expect(listed.map((summary) => summary.runId)).toEqual(["l2", "l1"]);
      expect(listed[0]).toMatchObject({
        runId: "l2",
        status: "completed",
        events: 2,
        createdAt: 20_000,
        updatedAt: 30_000,
        agentId: "agent",
        task: "a task",
      });
      expect(
        (await store.list({ status: "running", updatedAfter: 5_000 })).map(
          (summary) => summary.runId,
        ),
      ).toEqual(["l1"]);
      expect(
        (await store.list({ status: ["running", "completed"], updatedAfter: 5_000, limit: 1 })).map(
          (summary) => summary.runId,
        ),
      ).toEqual(["l2"]);
      expect(await store.list({ agentId: "nobody" })).toEqual([]);
    });

    it("lets exactly one of many concurrent writers at the same seq win", async () => {
      await store.append("race", [start("race")], { expectedSeq: 0 });
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, (_, index) =>
          store.append("race", [end(5_000 + index)], { expectedSeq: 1 }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
      expect(
        outcomes.filter(
          (outcome) =>
            outcome.status === "rejected" && AppendConflictError.isInstance(outcome.reason),
        ),
      ).toHaveLength(7);
      expect(await store.read("race")).toHaveLength(2);
    });

    it("round-trips any JSON payload exactly (NUL characters and lone surrogates included)", async () => {
      let index = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.string({ unit: "binary" }),
          fc.jsonValue({ maxDepth: 3 }),
          async (text, value) => {
            index += 1;
            const runId = `prop-${index}`;
            const event = { ...start(runId), task: text, context: { value } } as StoredEventInput;
            await store.append(runId, [event], { expectedSeq: 0 });
            const [read] = await store.read(runId);
            expect(read).toEqual(JSON.parse(JSON.stringify({ ...event, seq: 0 })));
          },
        ),
        { numRuns: 40 },
      );
    });

    it("validates its input with errors that say what to do", async () => {
      expect(() =>
        postgresEventStore({ connectionString: databaseUrl!, schema: "Bad-Name" }),
      ).toThrow(/not a valid schema name/);
      expect(() =>
        postgresEventStore({ connectionString: databaseUrl!, schema: "x; DROP TABLE y" }),
      ).toThrow(InvalidArgumentError);
      expect(() => postgresEventStore({} as never)).toThrow(/exactly one of pool/);
      await expect(store.append("", [], { expectedSeq: 0 })).rejects.toThrow(
        /run id "" is invalid/,
      );
      await expect(store.append("v", [], { expectedSeq: -1 })).rejects.toThrow(
        /expectedSeq must be a non-negative integer/,
      );
      await expect(store.append("v", [{ nope: 1 } as never], { expectedSeq: 0 })).rejects.toThrow(
        /string type/,
      );
    });
  });

  describe("fencing epochs", () => {
    let store: PostgresEventStore;
    beforeAll(() => {
      store = fresh();
    });

    it("refuses every append from a writer whose claim was taken over, even at the right seq", async () => {
      const first = await store.claim("f1");
      const zombie = store.fenced("f1", first);
      await zombie.append("f1", [start("f1")], { expectedSeq: 0 });
      const second = await store.claim("f1");
      expect(second).toBe(first + 1);
      expect(await store.epochOf("f1")).toBe(second);
      const refused = await zombie
        .append("f1", [end(2_000)], { expectedSeq: 1 })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(FencedError);
      expect(AppendConflictError.isInstance(refused)).toBe(true);
      expect(refused).toMatchObject({ code: "fenced", epoch: first, currentEpoch: second });
      const owner = store.fenced("f1", second);
      await owner.append("f1", [end(3_000)], { expectedSeq: 1 });
      expect((await store.read("f1")).map((event) => event.type)).toEqual(["run-start", "run-end"]);
      const pool = await store.pool();
      const { rows } = await pool.query(
        `SELECT seq, epoch FROM "${store.schema}".events WHERE run_id = 'f1' ORDER BY seq`,
      );
      expect(rows.map((row) => [row.seq, Number(row.epoch)])).toEqual([
        [0, first],
        [1, second],
      ]);
    });

    it("claimAndRead claims and reads in one call: nothing for a new run, the whole log after", async () => {
      expect(await store.claimAndRead("cr1")).toEqual({ epoch: 1, events: [] });
      const owner = store.fenced("cr1", 1);
      await owner.append("cr1", [start("cr1")], { expectedSeq: 0 });
      await owner.append("cr1", [end(2_000)], { expectedSeq: 1 });
      const again = await store.claimAndRead("cr1");
      expect(again.epoch).toBe(2);
      expect(again.events).toEqual(await store.read("cr1"));
      await expect(owner.append("cr1", [end(3_000)], { expectedSeq: 2 })).rejects.toBeInstanceOf(
        FencedError,
      );
      await expect(store.claimAndRead("../x")).rejects.toThrow(/run id/);
    });

    it("claimAndRead that waited for an append's row lock returns the log with that append in it", async () => {
      const owner = store.fenced("cr2", await store.claim("cr2"));
      await owner.append("cr2", [start("cr2")], { expectedSeq: 0 });
      // A writer holds the run's row lock with one more event, not yet committed.
      const writer = new pg.Client({ connectionString: databaseUrl! });
      await writer.connect();
      const s = `"${store.schema}"`;
      // The other writer chains its event as the store would (an unchained row is tampering).
      const previous = await writer.query(
        `SELECT chain FROM ${s}.events WHERE run_id = 'cr2' AND seq = 0`,
      );
      const body = JSON.stringify(end(2_000));
      const chain = link(previous.rows[0].chain, `{"seq":1,${body.slice(1)}`, undefined);
      await writer.query("BEGIN");
      await writer.query(`UPDATE ${s}.runs SET next_seq = 2, head = $1 WHERE run_id = 'cr2'`, [
        chain,
      ]);
      await writer.query(
        `INSERT INTO ${s}.events (run_id, seq, epoch, at, type, body, chain) VALUES ('cr2', 1, 1, 2000, 'run-end', $1, $2)`,
        [body, chain],
      );
      const claiming = store.claimAndRead("cr2");
      // Commit only once the claim is waiting for the row lock (its snapshot taken before).
      const pool = await store.pool();
      for (let tries = 0; ; tries += 1) {
        const { rows } = await pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%claimed AS%'`,
        );
        if (Number(rows[0]?.n) > 0) break;
        if (tries > 200) throw new Error("the claim never waited for the row lock");
        await new Promise((resolveWait) => setTimeout(resolveWait, 10));
      }
      await writer.query("COMMIT");
      await writer.end();
      const { epoch, events } = await claiming;
      expect(epoch).toBe(2);
      expect(events.map((event) => event.type)).toEqual(["run-start", "run-end"]);
    });

    it("fences a claim that races an in-flight append: the append lands before or is refused, never after", async () => {
      const epoch = await store.claim("f2");
      const writer = store.fenced("f2", epoch);
      await writer.append("f2", [start("f2")], { expectedSeq: 0 });
      const [appended, claimed] = await Promise.allSettled([
        writer.append("f2", [end(2_000)], { expectedSeq: 1 }),
        store.claim("f2"),
      ]);
      expect(claimed.status).toBe("fulfilled");
      const events = await store.read("f2");
      if (appended.status === "fulfilled") expect(events).toHaveLength(2);
      else expect(events).toHaveLength(1);
      await expect(
        writer.append("f2", [end(4_000)], { expectedSeq: events.length }),
      ).rejects.toBeInstanceOf(FencedError);
    });

    it("gives a worker's agent a fenced view: a zombie agent stops without writing", async () => {
      const model = testing.scriptedModel([
        { content: [{ type: "tool_use", id: "toolu_1", name: "note", input: { text: "hi" } }] },
        { content: "done" },
      ]);
      let executed = 0;
      const note = tool({
        name: "note",
        description: "Takes a note.",
        input: v.object({ text: v.string() }),
        run: async () => {
          executed += 1;
          // Another worker claims the run while this tool runs.
          await store.claim("f3");
          return "noted";
        },
      });
      const epoch = await store.claim("f3");
      const agent = createAgent({ model, tools: [note], store: store.fenced("f3", epoch) });
      const result = await agent.run("take a note", { runId: "f3" });
      expect(executed).toBe(1);
      expect(result.status).toBe("failed");
      expect(result.error).toMatch(/claimed again/);
      const events = await store.read("f3");
      expect(events.at(-1)?.type).toBe("tool-call-intent");
      expect(events.some((event: RunEvent) => event.type === "run-end")).toBe(false);
    });

    it("refuses a fenced view used for another run, and an epoch that claim never gave", async () => {
      const view = store.fenced("f4", 1);
      await expect(view.append("other", [start("other")], { expectedSeq: 0 })).rejects.toThrow(
        /fenced to run f4/,
      );
      expect(() => store.fenced("f4", 0)).toThrow(/positive integer/);
      await expect(view.append("f4", [start("f4")], { expectedSeq: 0 })).rejects.toBeInstanceOf(
        FencedError,
      );
    });
  });

  describe("migrations", () => {
    it("migrates once when many stores start at once, and records the version", async () => {
      const schema = freshSchema("lg_migrate");
      const many = Array.from({ length: 6 }, () => fresh(schema));
      await Promise.all(many.map((store) => store.migrate()));
      const client = new pg.Client({ connectionString: databaseUrl! });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT version, name FROM "${schema}".migrations ORDER BY version`,
        );
        expect(rows).toEqual([
          { version: 1, name: "runs, events, freeze" },
          { version: 2, name: "hash chain" },
          { version: 3, name: "tree columns" },
        ]);
      } finally {
        await client.end();
      }
    });

    it("works in a schema the caller names, on a pool the caller owns (and leaves the pool open)", async () => {
      const schema = freshSchema("lg_pool");
      schemas.push(schema);
      const pool = new pg.Pool({ connectionString: databaseUrl!, max: 2 });
      const store = postgresEventStore({ pool, schema });
      await store.append("p1", [start("p1")], { expectedSeq: 0 });
      await store.close();
      await store.close();
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".events`);
      expect(rows[0].n).toBe(1);
      await pool.end();
    });
  });

  describe("postgresFreezeStore", () => {
    it("freezes and unfreezes every process sharing the database", async () => {
      const schema = freshSchema("lg_freeze");
      schemas.push(schema);
      // cacheMs 0: every status() reads the database (the cache has its own test below).
      const here = postgresFreezeStore({ connectionString: databaseUrl!, schema, cacheMs: 0 });
      const there = postgresFreezeStore({ connectionString: databaseUrl!, schema, cacheMs: 0 });
      expect(here.name).toBe("postgres");
      expect(await there.status()).toEqual({ frozen: false });
      await here.freeze({ reason: "incident 42", by: "oncall@acme" });
      const frozen = await there.status();
      expect(frozen).toMatchObject({ frozen: true, reason: "incident 42", by: "oncall@acme" });
      expect(typeof frozen.at).toBe("number");
      await there.unfreeze();
      expect((await here.status()).frozen).toBe(false);
      await expect(here.freeze({ reason: "" } as never)).rejects.toThrow(/reason/);
      await here.close();
      await there.close();
    });

    it("reuses a read for cacheMs, then sees another process's freeze at the next call", async () => {
      const schema = freshSchema("lg_freeze_cache");
      schemas.push(schema);
      const pool = new pg.Pool({ connectionString: databaseUrl!, max: 2 });
      let reads = 0;
      const counted = {
        query: (text: string, values?: unknown[]) => {
          if (/FROM "[a-z0-9_]+"\.freeze WHERE id/.test(text)) reads += 1;
          return pool.query(text, values);
        },
        connect: () => pool.connect(),
        end: () => pool.end(),
      };
      let clock = 1_000_000;
      const worker = postgresFreezeStore({ pool: counted, schema, cacheMs: 250, now: () => clock });
      const operator = postgresFreezeStore({ connectionString: databaseUrl!, schema, cacheMs: 0 });
      expect(await worker.status()).toEqual({ frozen: false });
      // Calls at once share one read; calls inside the window read nothing.
      const together = await Promise.all(Array.from({ length: 20 }, () => worker.status()));
      expect(together.every((status) => status.frozen === false)).toBe(true);
      expect(reads).toBe(1);
      await operator.freeze({ reason: "refund bug", by: "oncall" });
      clock += 250;
      expect((await worker.status()).frozen).toBe(false); // still inside the window
      expect(reads).toBe(1);
      clock += 1;
      expect(await worker.status()).toMatchObject({
        frozen: true,
        reason: "refund bug",
        by: "oncall",
      });
      expect(reads).toBe(2);
      // This process's own unfreeze is seen at once, without a read.
      await worker.unfreeze({ by: "oncall" });
      expect((await worker.status()).frozen).toBe(false);
      expect(reads).toBe(2);
      // A failed read is not cached: the next call reads again.
      await pool.query(`ALTER TABLE "${schema}".freeze RENAME TO freeze_gone`);
      clock += 1_000;
      await expect(worker.status()).rejects.toThrow();
      await pool.query(`ALTER TABLE "${schema}".freeze_gone RENAME TO "freeze"`);
      expect((await worker.status()).frozen).toBe(false);
      expect(reads).toBe(4);
      expect(() => postgresFreezeStore({ pool: counted, schema, cacheMs: -1 })).toThrow(/cacheMs/);
      expect(() => postgresFreezeStore({ pool: counted, schema, now: 5 as never })).toThrow(/now/);
      await worker.close();
      await operator.close();
      await pool.end();
    });

    it("with the real clock, every caller sees a freeze once the window has passed", async () => {
      const schema = freshSchema("lg_freeze_clock");
      schemas.push(schema);
      const workers = Array.from({ length: 3 }, () =>
        postgresFreezeStore({ connectionString: databaseUrl!, schema, cacheMs: 100, max: 1 }),
      );
      const operator = postgresFreezeStore({ connectionString: databaseUrl!, schema, max: 1 });
      for (const worker of workers) expect((await worker.status()).frozen).toBe(false);
      await operator.freeze({ reason: "stop everything" });
      const committed = Date.now();
      await new Promise((resolveWait) => setTimeout(resolveWait, 150));
      for (const worker of workers) {
        expect(Date.now() - committed).toBeGreaterThan(100);
        expect((await worker.status()).frozen).toBe(true);
      }
      for (const store of [...workers, operator]) await store.close();
    });
  });
});
