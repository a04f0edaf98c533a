/**
 * What core's `describeEventStore` tree case does not check, for every checkpoint store: a
 * parent's summary holds its ended child's cost (`child-run-end`), a new store on the same data
 * (a new process) lists the tree with the same fields and filters, and `list({ parentRunId })` /
 * `list({ rootRunId })` are answered from an index where the store has SQL (the query plan names
 * it), including on a PostgreSQL schema made before the tree columns existed (migration 3 fills
 * them from the summaries, a task holding an escaped NUL included).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childRunId, type EventStore, type StoredEventInput } from "@loopguard/core";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { postgresEventStore } from "./postgres-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

const databaseUrl = process.env.DATABASE_URL;

/** A run-start, of a child when `parent` is given. */
function start(
  runId: string,
  parent?: { runId: string; callId: string; depth: number; rootRunId: string },
  task = `task of ${runId}`,
): StoredEventInput {
  return {
    type: "run-start",
    runId,
    agentId: parent ? `agent-${parent.depth}` : "lead",
    task,
    model: "claude-sonnet-5-5",
    maxTokens: 1_000,
    budget: { maxUsd: 1 },
    policyDigest: "policy",
    toolDigest: "tools",
    ...(parent ? { parent: { ...parent, tool: "delegate" } } : {}),
    at: 1_000,
  } as StoredEventInput;
}

/** A root, its child (whose task holds a NUL), and the child's child, which ended and billed its parent. */
async function writeTree(store: EventStore, root: string) {
  const child = childRunId(root, "toolu_a");
  const grandchild = childRunId(child, "toolu_b");
  await store.append(root, [start(root)], { expectedSeq: 0 });
  await store.append(
    child,
    [start(child, { runId: root, callId: "toolu_a", depth: 1, rootRunId: root }, "a\u0000b")],
    { expectedSeq: 0 },
  );
  const grandchildEvents = [
    start(grandchild, { runId: child, callId: "toolu_b", depth: 2, rootRunId: root }),
    {
      type: "run-end",
      runId: grandchild,
      status: "completed",
      why: "end_turn",
      answer: "done",
      at: 2_000,
    } as StoredEventInput,
  ];
  await store.append(grandchild, grandchildEvents, { expectedSeq: 0 });
  const childEnd = {
    type: "child-run-end",
    step: 1,
    callId: "toolu_b",
    childRunId: grandchild,
    status: "completed",
    costUsd: 0.25,
    tokens: { input: 10, output: 5 },
    steps: 1,
    trust: "trusted",
    at: 2_001,
  } as StoredEventInput;
  await store.append(child, [childEnd], { expectedSeq: 1 });
  return { root, child, grandchild };
}

type Tree = Awaited<ReturnType<typeof writeTree>>;

async function checkTree(store: EventStore, { root, child, grandchild }: Tree) {
  const ids = async (filter: Parameters<EventStore["list"]>[0]) =>
    (await store.list(filter)).map((summary) => summary.runId).sort();
  expect(await ids({ parentRunId: root })).toEqual([child]);
  expect(await ids({ parentRunId: child })).toEqual([grandchild]);
  expect(await ids({ rootRunId: root })).toEqual([child, grandchild].sort());
  const below = new Map((await store.list({ rootRunId: root })).map((row) => [row.runId, row]));
  expect(below.get(child)).toMatchObject({
    parentRunId: root,
    rootRunId: root,
    depth: 1,
    costUsd: 0.25,
    task: "a\u0000b",
  });
  expect(below.get(grandchild)).toMatchObject({
    parentRunId: child,
    rootRunId: root,
    depth: 2,
    status: "completed",
  });
}

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe("tree lists in every checkpoint store, across a reopen", () => {
  it("jsonl", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-tree-list-"));
    const open = () => {
      const store = jsonlEventStore({ dir });
      closers.push(() => store.close());
      return store;
    };
    const tree = await writeTree(open(), "run_tree_list");
    await checkTree(open(), tree);
  });

  it("sqlite, from its tree indexes", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "lg-tree-list-")), "runs.db");
    const open = () => {
      const store = sqliteEventStore({ path });
      closers.push(() => store.close());
      return store;
    };
    const first = open();
    const tree = await writeTree(first, "run_tree_list");
    await first.close();
    await checkTree(open(), tree);
    // The query list() sends (same WHERE and ORDER BY) searches the index, not the table.
    const db = new Database(path, { readonly: true });
    try {
      for (const [field, index] of [
        ["parentRunId", "loopguard_runs_by_parent"],
        ["rootRunId", "loopguard_runs_by_root"],
      ] as const) {
        const plan = db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT summary FROM loopguard_runs WHERE json_extract(summary, '$.${field}') = ? ORDER BY updated_at DESC, run_id LIMIT ?`,
          )
          .all(tree.root, 10) as Array<{ detail: string }>;
        expect(plan.map((row) => row.detail).join("; ")).toContain(`USING INDEX ${index}`);
      }
    } finally {
      db.close();
    }
  });

  it.skipIf(!databaseUrl)(
    "postgres, from its tree columns, on a schema migrated from before them",
    async () => {
      const schema = `lg_tree_list_${Math.random().toString(16).slice(2, 10)}`;
      const admin = new pg.Client({ connectionString: databaseUrl! });
      await admin.connect();
      closers.push(async () => {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      });
      const first = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
      const tree = await writeTree(first, "run_tree_list");
      const fresh = await writeTree(first, "run_tree_new");
      await first.close();
      await checkTree(
        (() => {
          const again = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
          closers.push(() => again.close());
          return again;
        })(),
        fresh,
      );
      // Back to the schema version 2 had (no tree columns), as a database made before them.
      await admin.query(
        `ALTER TABLE "${schema}".runs DROP COLUMN parent_run_id, DROP COLUMN root_run_id`,
      );
      await admin.query(`DELETE FROM "${schema}".migrations WHERE version = 3`);
      const migrated = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
      closers.push(() => migrated.close());
      await checkTree(migrated, tree);
      await checkTree(migrated, fresh);
      // The query list() sends is answered from the partial indexes (seq scans off: the
      // table is too small for the planner to prefer an index on its own).
      await admin.query("BEGIN");
      try {
        await admin.query("SET LOCAL enable_seqscan = off");
        for (const [column, index] of [
          ["parent_run_id", "runs_parent_idx"],
          ["root_run_id", "runs_root_idx"],
        ] as const) {
          const { rows } = await admin.query(
            `EXPLAIN SELECT summary FROM "${schema}".runs WHERE summary IS NOT NULL AND ${column} = $1 ORDER BY updated_at DESC, run_id COLLATE "C" LIMIT 10`,
            [tree.root],
          );
          expect(rows.map((row) => row["QUERY PLAN"]).join("\n")).toContain(index);
        }
      } finally {
        await admin.query("ROLLBACK");
      }
    },
  );
});
