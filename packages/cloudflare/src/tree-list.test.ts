/**
 * What core's `describeEventStore` tree case does not check, on a real D1 binding (workerd's
 * SQLite through miniflare): a parent's summary holds its ended child's cost (`child-run-end`),
 * a new store on the same binding lists the tree with the same fields and filters, and
 * `list({ parentRunId })` / `list({ rootRunId })` search the tree indexes (the query plan names them).
 */
import { childRunId, type EventStore, type StoredEventInput } from "@loopguard/core";
import { Miniflare } from "miniflare";
import { afterAll, expect, it } from "vitest";
import type { D1Database } from "./d1-database.js";
import { d1EventStore } from "./d1-event-store.js";
import { listQuery } from "./list-query.js";

const miniflare = new Miniflare({
  modules: true,
  script: "export default { fetch: () => new Response('') };",
  d1Databases: { DB: "loopguard-tree-list" },
  compatibilityDate: "2026-04-01",
});
afterAll(() => miniflare.dispose());

const start = (
  runId: string,
  parent?: { runId: string; callId: string; depth: number; rootRunId: string },
): StoredEventInput =>
  ({
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
  }) as StoredEventInput;

it("lists a tree by parentRunId and rootRunId from its indexes, with a child's cost in its parent, after a reopen", async () => {
  const database = (await miniflare.getD1Database("DB")) as unknown as D1Database;
  const store: EventStore = d1EventStore({ database });
  const root = "run_tree_list";
  const child = childRunId(root, "toolu_a");
  const grandchild = childRunId(child, "toolu_b");
  await store.append(root, [start(root)], { expectedSeq: 0 });
  await store.append(
    child,
    [start(child, { runId: root, callId: "toolu_a", depth: 1, rootRunId: root })],
    { expectedSeq: 0 },
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
  const reader = d1EventStore({ database });
  const ids = async (filter: Parameters<EventStore["list"]>[0]) =>
    (await reader.list(filter)).map((summary) => summary.runId).sort();
  expect(await ids({ parentRunId: root })).toEqual([child]);
  expect(await ids({ parentRunId: child })).toEqual([grandchild]);
  expect(await ids({ rootRunId: root })).toEqual([child, grandchild].sort());
  const below = new Map((await reader.list({ rootRunId: root })).map((row) => [row.runId, row]));
  expect(below.get(child)).toMatchObject({
    parentRunId: root,
    rootRunId: root,
    depth: 1,
    costUsd: 0.25,
  });
  expect(below.get(grandchild)).toMatchObject({ parentRunId: child, rootRunId: root, depth: 2 });
  // The very statement list() sends, explained by D1's SQLite.
  for (const [filter, index] of [
    [{ parentRunId: root, limit: 10 }, "loopguard_runs_by_parent"],
    [{ rootRunId: root, order: "oldest" }, "loopguard_runs_by_root"],
  ] as const) {
    const { sql, values } = listQuery(filter);
    const plan = await database
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .bind(...values)
      .all<{ detail: string }>();
    expect((plan.results ?? []).map((row) => row.detail).join("; ")).toContain(
      `USING INDEX ${index}`,
    );
  }
});
