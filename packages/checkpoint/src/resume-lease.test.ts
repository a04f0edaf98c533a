/**
 * One owner per resume (JSONL and SQLite): two resumers of the same crashed run, whose
 * pending tool call is slow. The first takes the run's lease for its whole resume; the
 * second, through another store instance (as another process would) or the same one, gets
 * RunLockedError before it executes anything, and the tool runs once.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent, type EventStore, LoopguardError, tool } from "@loopguard/core";
import { callUntilResult } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

const kinds: Array<[string, () => (instance: number) => EventStore]> = [
  [
    "jsonl",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "lg-resume-lease-"));
      return () => jsonlEventStore({ dir, lockTimeoutMs: 300 });
    },
  ],
  [
    "sqlite",
    () => {
      const path = join(mkdtempSync(join(tmpdir(), "lg-resume-lease-")), "runs.db");
      return () => sqliteEventStore({ path, leaseTimeoutMs: 300 });
    },
  ],
];

function payingAgent(store: EventStore, pay: (key: string) => Promise<string>) {
  return createAgent({
    store,
    tools: [
      tool({
        name: "refund",
        description: "Refunds an order.",
        input: v.object({ order: v.string() }),
        run: (_args, context) => pay(context.idempotencyKey),
      }),
    ],
    model: callUntilResult({ name: "refund", input: { order: "A1" } }, "refunded"),
  });
}

for (const [kind, makeStores] of kinds) {
  describe(`${kind}: a resume holds the run`, () => {
    it("refuses a second resumer, in another store instance or the same, before it executes anything", async () => {
      const storeOf = makeStores();
      // The first process: its refund intent is durable, then it "crashes" inside the tool.
      const crashed = storeOf(0);
      let intent!: () => void;
      const intentWritten = new Promise<void>((resolve) => {
        intent = resolve;
      });
      void payingAgent(crashed, () => {
        intent();
        return new Promise<string>(() => undefined);
      }).run("refund A1", { runId: "run_lease" });
      await intentWritten;
      await crashed.close?.();

      const refunds: string[] = [];
      let finish!: () => void;
      const slow = new Promise<void>((resolve) => {
        finish = resolve;
      });
      let started!: () => void;
      const inTool = new Promise<void>((resolve) => {
        started = resolve;
      });
      const first = storeOf(1);
      const resuming = payingAgent(first, async (key) => {
        refunds.push(key);
        started();
        await slow;
        return "refunded";
      }).resume("run_lease");
      await inTool;

      const second = storeOf(2);
      const refuse = async (store: EventStore) => {
        const error = await payingAgent(store, async (key) => {
          refunds.push(`second:${key}`);
          return "refunded";
        })
          .resume("run_lease")
          .then(
            () => undefined,
            (rejection: unknown) => rejection,
          );
        expect(LoopguardError.isInstance(error) && error.code).toBe("run_locked");
        return error as Error;
      };
      expect((await refuse(second)).message).toMatch(/^\[checkpoint\] /);
      // The same store instance refuses at once.
      await refuse(first);

      finish();
      const result = await resuming;
      expect(result.status).toBe("completed");
      expect(refunds).toEqual(["run_lease:toolu_1"]);
      // Released: a later resume reads the ended run and executes nothing.
      const again = await payingAgent(second, async (key) => {
        refunds.push(`later:${key}`);
        return "refunded";
      }).resume("run_lease");
      expect(again.status).toBe("completed");
      expect(refunds).toEqual(["run_lease:toolu_1"]);
      await Promise.all([first.close?.(), second.close?.()]);
    });
  });
}
