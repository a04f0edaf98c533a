import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { EventStore } from "./contracts/event-store.js";
import type { Gate } from "./contracts/gate.js";
import { createAgent, tool } from "./index.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

// One failed write must never kill the host process: a store that fails (ENOSPC) or a vault
// that throws, at any await point of a two-call turn whose second call is still in an async
// gate, ends that run as `failed` with the cause, and other runs in the process go on.
// (vitest fails the file on any unhandled rejection, so "no crash" is asserted by running.)

const enospc = () =>
  Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });

function workload() {
  const effects: string[] = [];
  const lookup = tool({
    name: "lookup_order",
    description: "Look up an order.",
    input: v.object({ order_id: v.string() }),
    run: async ({ order_id }) => `Order ${order_id}: delivered to jane.doe@acme.io`,
  });
  const refund = tool({
    name: "issue_refund",
    description: "Refund.",
    input: v.object({ order_id: v.string() }),
    run: async ({ order_id }) => {
      effects.push(order_id);
      return "refunded";
    },
  });
  // The second call waits in an async gate while the first call's result is written.
  const slowGate: Gate = {
    name: "slow_policy",
    step: "2",
    check: async (call) => {
      if (call.tool === "issue_refund") await new Promise((resolve) => setTimeout(resolve, 5));
      return { type: "allow" };
    },
  };
  const model = () =>
    scriptedModel([
      {
        content: [
          { type: "tool_use", id: "t1", name: "lookup_order", input: { order_id: "A1" } },
          { type: "tool_use", id: "t2", name: "issue_refund", input: { order_id: "A1" } },
        ],
      },
      { content: "All done for <EMAIL_1>." },
    ]);
  return { effects, tools: [lookup, refund], gates: [slowGate], model };
}

/** A store whose `n`-th append (1-based) rejects. */
function failingOnAppend(n: number): EventStore & { appends: number } {
  const inner = memoryEventStore();
  const store = {
    name: "failing",
    appends: 0,
    async append(...args: Parameters<EventStore["append"]>) {
      store.appends += 1;
      if (store.appends === n) throw enospc();
      return inner.append(...args);
    },
    read: (runId: string) => inner.read(runId),
    list: (filter?: Parameters<EventStore["list"]>[0]) => inner.list(filter),
  };
  return store;
}

/** A vault whose `n`-th tokenize call throws. */
function failingVault(n: number) {
  let calls = 0;
  return {
    calls: () => calls,
    vault: {
      tokenize(text: string) {
        calls += 1;
        if (calls === n) throw new Error("vault: key service unavailable");
        return text.replace(/jane\.doe@acme\.io/g, "<EMAIL_1>");
      },
      reveal<T>(value: T): T {
        return JSON.parse(JSON.stringify(value).replace(/<EMAIL_1>/g, "jane.doe@acme.io")) as T;
      },
    },
  };
}

async function countAppends(): Promise<number> {
  const { tools, gates, model } = workload();
  const store = failingOnAppend(Number.POSITIVE_INFINITY);
  await createAgent({ model: model(), tools, gates, store }).run("refund A1");
  return store.appends;
}

async function countTokenizes(): Promise<number> {
  const { tools, gates, model } = workload();
  const probe = failingVault(Number.POSITIVE_INFINITY);
  await createAgent({ model: model(), tools, gates, vault: probe.vault }).run("refund A1");
  return probe.calls();
}

describe("faults at every await point of a two-call turn", () => {
  it("a store that fails at any append ends the run as failed with the cause; other runs go on", async () => {
    const total = await countAppends();
    expect(total).toBeGreaterThan(5);
    for (let n = 1; n <= total; n += 1) {
      const { effects, tools, gates, model } = workload();
      const store = failingOnAppend(n);
      const bystander = workload();
      const [result, other] = await Promise.all([
        createAgent({ model: model(), tools, gates, store }).run("refund A1"),
        createAgent({
          model: bystander.model(),
          tools: bystander.tools,
          gates: bystander.gates,
        }).run("refund A1"),
      ]);
      expect(result.status, `append ${n} of ${total}`).toBe("failed");
      expect(result.error ?? "", `append ${n}`).toMatch(/ENOSPC/);
      // No action the log did not record first: a refund ran only if its intent was durable.
      const events = await store.read(result.runId).catch(() => []);
      const intents = events.filter(
        (event) => event.type === "tool-call-intent" && event.tool === "issue_refund",
      );
      expect(effects.length, `append ${n}`).toBeLessThanOrEqual(intents.length);
      expect(other.status).toBe("completed");
      expect(bystander.effects).toEqual(["A1"]);
    }
  });

  it("a vault that throws at any tokenisation ends the run as failed with the cause; nothing is written in clear", async () => {
    const total = await countTokenizes();
    expect(total).toBeGreaterThan(2);
    for (let n = 1; n <= total; n += 1) {
      const { tools, gates, model } = workload();
      const probe = failingVault(n);
      const store = memoryEventStore();
      const result = await createAgent({
        model: model(),
        tools,
        gates,
        store,
        vault: probe.vault,
      }).run("refund A1");
      expect(result.status, `tokenize ${n} of ${total}`).toBe("failed");
      expect(result.error ?? "", `tokenize ${n}`).toMatch(/key service unavailable/);
      expect(JSON.stringify(await store.read(result.runId))).not.toContain("jane.doe@acme.io");
    }
  });
});
