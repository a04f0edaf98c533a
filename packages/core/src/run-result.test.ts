import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { EventStore, StoredEventInput } from "./index.js";
import { createAgent, memoryEventStore, tool } from "./index.js";
import { scriptedModel } from "./testing/index.js";

const diskFull = () =>
  Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });

/** A store whose appends fail while `failOn` names a type in the batch (the fault is switchable). */
function faultyStore(inner: EventStore) {
  const control = { failOn: undefined as string | undefined, failures: 0 };
  const store: EventStore = {
    name: "faulty",
    append(runId, events: readonly StoredEventInput[], options) {
      if (control.failOn && events.some((event) => event.type === control.failOn)) {
        control.failures += 1;
        return Promise.reject(diskFull());
      }
      return inner.append(runId, events, options);
    },
    read: (runId) => inner.read(runId),
    list: (filter) => inner.list(filter),
  };
  return { store, control };
}

function refundAgent(store: EventStore) {
  const keys: string[] = [];
  const refund = tool({
    name: "issue_refund",
    description: "Refund an order.",
    input: v.object({ order_id: v.string() }),
    run: async ({ order_id }, context) => {
      keys.push(context.idempotencyKey);
      return `refunded ${order_id}`;
    },
  });
  const model = scriptedModel((request) =>
    request.messages.length < 2
      ? {
          content: [
            { type: "tool_use", id: "toolu_r1", name: "issue_refund", input: { order_id: "A1" } },
          ],
        }
      : { content: "Refunded." },
  );
  return { agent: createAgent({ model, tools: [refund], store }), keys };
}

describe("truthful results when the event store fails", () => {
  it("after a tool ran (intent logged, result not): the effect may have happened; resume re-runs it with the same idempotency key", async () => {
    const inner = memoryEventStore();
    const { store, control } = faultyStore(inner);
    const { agent, keys } = refundAgent(store);
    control.failOn = "tool-call-result";
    const result = await agent.run("Refund A1", { runId: "run_full_disk" });
    expect(control.failures).toBe(1);
    expect(keys).toEqual(["run_full_disk:toolu_r1"]);
    expect(result.status).toBe("failed");
    expect(result.uncertainCalls).toEqual([
      { tool: "issue_refund", toolUseId: "toolu_r1", idempotencyKey: "run_full_disk:toolu_r1" },
    ]);
    expect(result.error).toMatch(
      /^\[core\] the event store failed after issue_refund \(toolu_r1, idempotency key run_full_disk:toolu_r1\) was admitted, so its result is not in the log: its effect may have happened\. resume\("run_full_disk"\) runs it again with the same idempotency key.*ENOSPC/,
    );
    expect(result.error).not.toMatch(/before acting/);
    // The log ends with the intent, as the message says.
    expect((await inner.read("run_full_disk")).at(-1)?.type).toBe("tool-call-intent");
    control.failOn = undefined;
    const resumed = await agent.resume("run_full_disk");
    expect(resumed.status).toBe("completed");
    expect(resumed.answer).toBe("Refunded.");
    expect(keys).toEqual(["run_full_disk:toolu_r1", "run_full_disk:toolu_r1"]);
  });

  it("before a tool ran (the intent write failed): the run stopped before acting, and nothing ran", async () => {
    const { store, control } = faultyStore(memoryEventStore());
    const { agent, keys } = refundAgent(store);
    control.failOn = "tool-call-intent";
    const result = await agent.run("Refund A1");
    expect(keys).toEqual([]);
    expect(result.status).toBe("failed");
    expect(result.uncertainCalls).toBeUndefined();
    expect(result.error).toMatch(
      /the event store failed, so the run stopped before acting: ENOSPC/,
    );
  });

  it("when the first event cannot be written: reported as not started, with its id, nothing to resume", async () => {
    const inner = memoryEventStore();
    const { store, control } = faultyStore(inner);
    const { agent, keys } = refundAgent(store);
    control.failOn = "run-start";
    const result = await agent.run("Refund A1", { runId: "run_never" });
    expect(result).toMatchObject({
      runId: "run_never",
      status: "failed",
      why: "not_started",
      steps: 0,
    });
    expect(result.error).toMatch(
      /^\[core\] run run_never could not start: .*ENOSPC.*it was not started, nothing was executed and there is nothing to resume/,
    );
    expect(keys).toEqual([]);
    expect(await inner.read("run_never")).toEqual([]);
    expect(await inner.list()).toEqual([]);
  });
});
