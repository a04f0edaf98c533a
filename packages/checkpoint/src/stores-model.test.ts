import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventStore, StoredEventInput } from "@loopguard/core";
import { memoryEventStore } from "@loopguard/core/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

/** One step of a random workload: an append (maybe with a stale or future expectedSeq) or a reopen. */
type Step =
  | { kind: "append"; run: number; offset: number; texts: string[]; concurrent: boolean }
  | { kind: "reopen" };

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      run: fc.integer({ min: 0, max: 2 }),
      // Mostly the right expectedSeq; sometimes a stale or a future one.
      offset: fc.oneof(
        { weight: 5, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: -3, max: 3 }) },
      ),
      // No empty appends: memoryEventStore lists a run after an empty append to it (with
      // Date.now() times), which the durable stores do not; see the package report.
      texts: fc.array(fc.string({ unit: "grapheme", maxLength: 30 }), {
        minLength: 1,
        maxLength: 4,
      }),
      concurrent: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "reopen" as const }) },
);

const eventOf = (runId: string, run: number, seq: number, text: string): StoredEventInput =>
  seq === 0
    ? {
        type: "run-start",
        runId,
        agentId: `agent_${run % 2}`,
        task: text || "task",
        model: "claude-sonnet-5-5",
        maxTokens: 1024,
        budget: {},
        policyDigest: "p",
        toolDigest: "t",
        at: 1000 + seq,
      }
    : {
        type: "model-retry",
        step: 1,
        attempt: seq,
        kind: "overloaded",
        waitMs: 1,
        message: text,
        at: 1000 + seq,
      };

/** Runs the steps against a store and returns everything observable. */
async function observe(
  open: () => EventStore,
  reopen: (previous: EventStore) => EventStore,
  steps: Step[],
  prefix: string,
) {
  let store = open();
  const lengths = [0, 0, 0];
  const outcomes: string[] = [];
  for (const step of steps) {
    if (step.kind === "reopen") {
      await store.close?.();
      store = reopen(store);
      continue;
    }
    const runId = `${prefix}_${step.run}`;
    const expectedSeq = Math.max(0, lengths[step.run]! + step.offset);
    const events = step.texts.map((text, index) =>
      eventOf(runId, step.run, expectedSeq + index, text),
    );
    const attempt = () =>
      store.append(runId, events, { expectedSeq }).then(
        (result) => `ok ${result.nextSeq}`,
        (error: { code?: string }) => `rejected ${error.code}`,
      );
    // A concurrent twin with the same expectedSeq: exactly one of the two may win.
    const settled = step.concurrent ? await Promise.all([attempt(), attempt()]) : [await attempt()];
    outcomes.push(settled.sort().join(" | "));
    if (settled.some((outcome) => outcome.startsWith("ok")))
      lengths[step.run] = expectedSeq + events.length;
  }
  const logs = [];
  for (let run = 0; run < 3; run += 1)
    logs.push(
      (await store.read(`${prefix}_${run}`)).map((event) => ({
        ...event,
        runId: undefined,
        task: undefined,
      })),
    );
  const summaries = (await store.list()).map((summary) => ({
    ...summary,
    runId: summary.runId.slice(prefix.length),
    task: undefined,
  }));
  await store.close?.();
  return { outcomes, logs, summaries };
}

describe("every store behaves like the reference memory store on random workloads", () => {
  let counter = 0;
  const prefix = () => {
    counter += 1;
    return `run_model${counter}`;
  };
  const candidates: Array<[string, () => EventStore, (previous: EventStore) => EventStore]> = [
    [
      "jsonl",
      () => jsonlEventStore({ dir: mkdtempSync(join(tmpdir(), "lg-model-jsonl-")) }),
      (previous) => jsonlEventStore({ dir: (previous as unknown as { dir: string }).dir }),
    ],
    [
      "sqlite",
      () => {
        const path = join(mkdtempSync(join(tmpdir(), "lg-model-sqlite-")), "runs.db");
        return Object.assign(sqliteEventStore({ path }), { path });
      },
      (previous) => {
        const path = (previous as unknown as { path: string }).path;
        return Object.assign(sqliteEventStore({ path }), { path });
      },
    ],
  ];
  for (const [name, open, reopen] of candidates) {
    it(`${name}: same outcomes, logs and summaries as memoryEventStore`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(stepArbitrary, { minLength: 1, maxLength: 10 }),
          async (steps) => {
            const memory = memoryEventStore();
            const expected = await observe(
              () => memory,
              () => memory,
              steps,
              prefix(),
            );
            const actual = await observe(open, reopen, steps, prefix());
            expect(actual).toEqual(expected);
          },
        ),
        { numRuns: 12, seed: 1130 },
      );
    });
  }
});
