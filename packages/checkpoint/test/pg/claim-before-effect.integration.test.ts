/**
 * Claim before effect: a worker paused (as by SIGSTOP past its lease) right after its tool
 * call's intent became durable wakes up with its claim taken over. Core re-checks the claim
 * right before the tool runs, so the stale worker executes nothing; the new owner runs the
 * tool once, with the same idempotency key.
 */
import { createAgent, type EventStore, tool } from "@loopguard/core";
import { foldRun } from "@loopguard/core/plugin";
import { callUntilResult } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterAll, describe, expect, it } from "vitest";
import { type FencedEventStore, postgresEventStore } from "../../src/postgres-event-store.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

describe.skipIf(!databaseUrl)("claim before effect", () => {
  const schema = freshSchema("lg_claim");
  afterAll(() => dropSchema(schema));

  it("a worker whose claim was taken while it was paused executes no tool; the owner executes it once", async () => {
    const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 2 });
    const payments: string[] = [];
    const pay = tool({
      name: "pay",
      description: "Pays an invoice.",
      input: v.object({ invoice: v.string() }),
      run: async ({ invoice }, context) => {
        payments.push(`${invoice}:${context.idempotencyKey}`);
        return "paid";
      },
    });
    const agentOn = (view: EventStore) =>
      createAgent({
        store: view,
        tools: [pay],
        // Asks for the payment until a tool result is in the conversation, then answers.
        model: callUntilResult({ name: "pay", input: { invoice: "I-1" } }, "paid it"),
      });
    const runId = "claim-1";
    // Worker A: its intent commits, then the process is paused before the tool runs.
    let wake!: () => void;
    const paused = new Promise<void>((resolve) => {
      wake = resolve;
    });
    let intentDurable!: () => void;
    const durable = new Promise<void>((resolve) => {
      intentDurable = resolve;
    });
    const viewA: FencedEventStore = store.fenced(runId, await store.claim(runId));
    const pausingA: EventStore = {
      name: viewA.name,
      read: (id) => viewA.read(id),
      list: (filter) => viewA.list(filter),
      confirmOwner: (id) => viewA.confirmOwner(id),
      async append(id, events, options) {
        const result = await viewA.append(id, events, options);
        if (events.some((event) => event.type === "tool-call-intent")) {
          intentDurable();
          await paused;
        }
        return result;
      },
    };
    const runA = agentOn(pausingA).run("pay invoice I-1", { runId });
    await durable;
    // Worker B claims the run meanwhile (A's lease expired) and finishes it.
    const viewB = store.fenced(runId, await store.claim(runId));
    const owner = await agentOn(viewB).resume(runId);
    expect(owner.status).toBe("completed");
    expect(payments).toEqual([`I-1:${runId}:toolu_1`]);
    // A wakes: the claim check before the tool refuses, and nothing more is paid.
    wake();
    const stale = await runA;
    expect(stale.status).toBe("failed");
    expect(stale.error).toMatch(/claimed again \(epoch 2\).*executes nothing more/);
    expect(payments).toEqual([`I-1:${runId}:toolu_1`]);
    const events = await store.read(runId);
    expect(foldRun(events, runId).status).toBe("completed");
    expect(events.filter((event) => event.type === "tool-call-result")).toHaveLength(1);
    await store.close();
  }, 600_000);
});
