/**
 * The D1 store lists a delegation tree's runs with their place in it: a child run's summary
 * carries `parentRunId`, `rootRunId` and `depth` from its `run-start` (a root's none), and a
 * parent's cost includes its ended children's, also read back by a new store on the binding.
 */
import { childRunId, type EventStore, type StoredEventInput } from "@loopguard/core";
import { Miniflare } from "miniflare";
import { afterAll, expect, it } from "vitest";
import type { D1Database } from "./d1-database.js";
import { d1EventStore } from "./d1-event-store.js";

const miniflare = new Miniflare({
  modules: true,
  script: "export default { fetch: () => new Response('') };",
  d1Databases: { DB: "loopguard-tree-summaries" },
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

it("lists a tree's runs with parentRunId, rootRunId and depth; a parent's cost holds its ended child's", async () => {
  const database = (await miniflare.getD1Database("DB")) as unknown as D1Database;
  const store: EventStore = d1EventStore({ database });
  const root = "run_tree_summary";
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
  for (const reader of [store, d1EventStore({ database })]) {
    const byId = new Map(
      (await reader.list({ limit: 100 })).map((summary) => [summary.runId, summary]),
    );
    expect(byId.size).toBe(3);
    const rootSummary = byId.get(root)!;
    expect([rootSummary.parentRunId, rootSummary.rootRunId, rootSummary.depth]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
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
});
