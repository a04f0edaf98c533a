/**
 * Every checkpoint store lists a delegation tree's runs with their place in it: a child run's
 * summary carries `parentRunId`, `rootRunId` and `depth` from its `run-start`, a root's carries
 * none, and a parent's cost includes its ended children's (core's summary, kept by each store).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childRunId, type EventStore, type StoredEventInput } from "@loopguard/core";
import { afterAll, describe, expect, it } from "vitest";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { postgresEventStore } from "./postgres-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

const databaseUrl = process.env.DATABASE_URL;

/** A run-start, of a child when `parent` is given. */
function start(
  runId: string,
  parent?: { runId: string; callId: string; depth: number; rootRunId: string },
): StoredEventInput {
  return {
    type: "run-start",
    runId,
    agentId: parent ? `agent-${parent.depth}` : "lead",
    task: `task of ${runId}`,
    model: "claude-sonnet-5-5",
    maxTokens: 1_000,
    budget: { maxUsd: 1 },
    policyDigest: "policy",
    toolDigest: "tools",
    ...(parent ? { parent: { ...parent, tool: "delegate" } } : {}),
    at: 1_000,
  } as StoredEventInput;
}

/** A root, its child, and the child's child; the grandchild ended and its cost reached its parent. */
async function writeTree(store: EventStore) {
  const root = "run_tree_summary";
  const child = childRunId(root, "toolu_a");
  const grandchild = childRunId(child, "toolu_b");
  await store.append(root, [start(root)], { expectedSeq: 0 });
  await store.append(
    child,
    [start(child, { runId: root, callId: "toolu_a", depth: 1, rootRunId: root })],
    {
      expectedSeq: 0,
    },
  );
  await store.append(
    grandchild,
    [
      start(grandchild, { runId: child, callId: "toolu_b", depth: 2, rootRunId: root }),
      {
        type: "run-end",
        runId: grandchild,
        status: "completed",
        why: "end_turn",
        answer: "done",
        at: 2_000,
      } as StoredEventInput,
    ],
    { expectedSeq: 0 },
  );
  await store.append(
    child,
    [
      {
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
      } as StoredEventInput,
    ],
    { expectedSeq: 1 },
  );
  return { root, child, grandchild };
}

async function checkTree(store: EventStore, reopen?: () => EventStore) {
  const ids = await writeTree(store);
  await checkSummaries(store, ids);
  // Read back by another store on the same data (a new process): the same fields.
  if (reopen) await checkSummaries(reopen(), ids);
}

async function checkSummaries(
  store: EventStore,
  { root, child, grandchild }: { root: string; child: string; grandchild: string },
) {
  const byId = new Map(
    (await store.list({ limit: 100 })).map((summary) => [summary.runId, summary]),
  );
  expect(byId.size).toBe(3);
  const rootSummary = byId.get(root)!;
  expect(rootSummary.parentRunId).toBeUndefined();
  expect(rootSummary.rootRunId).toBeUndefined();
  expect(rootSummary.depth).toBeUndefined();
  expect(byId.get(child)).toMatchObject({
    parentRunId: root,
    rootRunId: root,
    depth: 1,
    costUsd: 0.25,
  });
  expect(byId.get(grandchild)).toMatchObject({
    parentRunId: child,
    rootRunId: root,
    depth: 2,
    status: "completed",
  });
}

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close();
});

describe("tree summaries in every checkpoint store", () => {
  it("jsonl", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-tree-summary-"));
    const open = () => {
      const store = jsonlEventStore({ dir });
      closers.push(() => store.close());
      return store;
    };
    await checkTree(open(), open);
  });

  it("sqlite", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "lg-tree-summary-")), "runs.db");
    const open = () => {
      const store = sqliteEventStore({ path });
      closers.push(() => store.close());
      return store;
    };
    await checkTree(open(), open);
  });

  it.skipIf(!databaseUrl)("postgres", async () => {
    const schema = `lg_tree_summary_${Math.random().toString(16).slice(2, 10)}`;
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
    const again = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
    closers.push(async () => {
      const pool = await store.pool();
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await again.close();
      await store.close();
    });
    await checkTree(store, () => again);
  });
});
