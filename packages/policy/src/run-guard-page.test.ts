/**
 * The RunGuard page of agent_airlock ("Loops", and the halting paragraph after it), one test per
 * sentence, through a real loop or `guardTool`/`withRun`. Each test quotes
 * the sentence it checks.
 */
import { createAgent, guardTool, type StoredEvent, tool, withRun } from "@loopguard/core";
import { digestOf } from "@loopguard/core/plugin";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { policy } from "./policy.js";
import { argGt } from "./predicate.js";
import { allow, deny } from "./rule.js";
import { runGuard } from "./run-guard.js";

function counting(name: string) {
  const counter = { runs: 0 };
  const item = tool({
    name,
    description: name,
    input: v.object({ id: v.string(), note: v.optional(v.string()) }),
    run: async () => {
      counter.runs += 1;
      return `${name} ok`;
    },
  });
  return { item, counter };
}

/** A model that makes `calls` one per turn (or several per turn when given arrays), then answers. */
function looping(
  turns: Array<
    | { name: string; input: Record<string, unknown> }
    | Array<{ name: string; input: Record<string, unknown> }>
  >,
) {
  return scriptedModel((_request, call) => {
    const turn = turns[call - 1];
    if (!turn) return { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" };
    const uses = Array.isArray(turn) ? turn : [turn];
    return {
      content: uses.map((use, index) => ({
        type: "tool_use",
        id: `toolu_${call}_${index}`,
        name: use.name,
        input: use.input,
      })),
    };
  });
}

const same = (count: number, name = "lookup", input: Record<string, unknown> = { id: "A1" }) =>
  Array.from({ length: count }, () => ({ name, input }));

describe("the RunGuard page, sentence by sentence", () => {
  it("“With detect_loops (on by default), step 2.3 keeps the run's recent calls as (tool, arguments digest), the same canonical digest approvals bind to.”", async () => {
    const guard = runGuard();
    expect(guard.settings.detectLoops).toBe(true);
    expect(guard.step).toBe("2.3");
    // The same arguments in another key order are the same call: the canonical digest.
    const { item } = counting("lookup");
    const store = memoryEventStore();
    const orders = [
      { id: "A1", note: "n" },
      { note: "n", id: "A1" },
    ];
    const model = looping(
      Array.from({ length: 5 }, (_unused, index) => ({
        name: "lookup",
        input: orders[index % 2]!,
      })),
    );
    const result = await createAgent({ model, tools: [item], store, gates: [guard] }).run(
      "Find A1",
    );
    expect(result.blocked.map((call) => call.reason)).toEqual(["loop_detected"]);
    const intents = (await store.read(result.runId)).filter(
      (event): event is Extract<StoredEvent, { type: "tool-call-intent" }> =>
        event.type === "tool-call-intent",
    );
    expect(new Set(intents.map((event) => event.argsDigest))).toEqual(
      new Set([digestOf({ id: "A1", note: "n" })]),
    );
  });

  it("“When a block of 1 to max_loop_period calls (5 by default) has just repeated loop_repeats times in a row (5 by default): the call that completes it is refused with violation_type loop_detected, and its fix hints tell the model to change approach, since one more repeat ends the run”", async () => {
    expect(runGuard().settings).toMatchObject({ loopRepeats: 5, maxLoopPeriod: 5 });
    const names = ["a", "b", "c", "d", "e", "f"];
    const tools = names.map((name) => counting(name).item);
    const cycle = (period: number, count: number) =>
      Array.from({ length: count }, (_unused, index) => ({
        name: names[index % period]!,
        input: { id: "1" },
      }));
    // A block of five calls repeated five times trips on its 25th call.
    const five = await createAgent({
      model: looping(cycle(5, 25)),
      tools,
      gates: [runGuard()],
    }).run("Go");
    expect(five.blocked).toHaveLength(1);
    expect(five.blocked[0]).toMatchObject({
      toolUseId: "toolu_25_0",
      reason: "loop_detected",
      decision: { refusedAt: "2.3:run_loop" },
    });
    const hints = five.blocked[0]!.decision.fixHints!.join(" ");
    expect(hints).toMatch(/Change approach/);
    expect(hints).toMatch(/One more repeated loop ends the run/);
    // A block of six is longer than max_loop_period: it never trips.
    const six = await createAgent({ model: looping(cycle(6, 36)), tools, gates: [runGuard()] }).run(
      "Go",
    );
    expect(six.blocked).toEqual([]);
  });

  it("“the next call that completes a loop halts the run, and is refused as run_halted.”", async () => {
    const { item, counter } = counting("lookup");
    const store = memoryEventStore();
    const result = await createAgent({
      model: looping(same(12)),
      tools: [item],
      store,
      gates: [runGuard()],
    }).run("Find A1");
    expect(result.blocked.map((call) => call.reason)).toEqual(["loop_detected", "run_halted"]);
    expect(result.blocked[1]!.decision).toMatchObject({
      refusedAt: "2.3:run_loop",
      reason: "run_halted",
      halted: true,
      details: { haltReason: "loop_detected", period: 1, repeats: 5, tools: ["lookup"] },
    });
    expect(result.status).toBe("halted");
    expect(result.haltReason).toBe("loop_detected");
    expect(counter.runs).toBe(4);
    const halts = (await store.read(result.runId)).filter((event) => event.type === "run-halt");
    expect(halts).toMatchObject([{ reason: "loop_detected" }]);
  });

  it("“So a single call made five times trips on the fifth, as does a three-call sequence on its fifteenth call.”", async () => {
    const { item } = counting("lookup");
    const single = await createAgent({
      model: looping(same(5)),
      tools: [item],
      gates: [runGuard()],
    }).run("Go");
    expect(single.blocked.map((call) => call.toolUseId)).toEqual(["toolu_5_0"]);
    const names = ["a", "b", "c"];
    const model = looping(
      Array.from({ length: 15 }, (_unused, index) => ({
        name: names[index % 3]!,
        input: { id: "1" },
      })),
    );
    const triple = await createAgent({
      model,
      tools: names.map((name) => counting(name).item),
      gates: [runGuard()],
    }).run("Go");
    expect(triple.blocked.map((call) => call.toolUseId)).toEqual(["toolu_15_0"]);
  });

  it("“The same tool called with different arguments never trips.” (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 60 }),
        (ids) => {
          const guard = runGuard();
          const run = runOf();
          for (const id of ids) {
            const call = callOf("lookup", { id }, run);
            if (guard.check(call).type !== "allow") return false;
            run.calls.push({
              tool: "lookup",
              argsDigest: digestOf({ id }),
              toolUseId: call.toolUseId,
            });
          }
          return true;
        },
      ),
      { numRuns: 200 },
    );
  });

  it("“Only calls the policy admitted at step 2 are counted, and only those whose policy carries the RunGuard.”", async () => {
    // Every other call is denied by the policy: the loop trips on the fifth admitted call (the ninth made).
    let made = 0;
    const { item } = counting("lookup");
    const everyOther = policy([allow("lookup"), deny("lookup", { when: () => ++made % 2 === 0 })]);
    const result = await createAgent({
      model: looping(same(9)),
      tools: [item],
      gates: [everyOther, runGuard()],
    }).run("Go");
    expect(result.blocked.map((call) => call.reason)).toEqual([
      "policy_deny",
      "policy_deny",
      "policy_deny",
      "policy_deny",
      "loop_detected",
    ]);
    expect(result.blocked.at(-1)!.toolUseId).toBe("toolu_9_0");
    // Calls through a tool whose gates carry no RunGuard are not counted by one that does.
    const { item: lookup } = counting("lookup");
    const unguarded = guardTool(lookup, { gates: [policy([allow("*")])] });
    const guarded = guardTool(lookup, { gates: [runGuard()] });
    await withRun({ agentId: "host" }, async () => {
      for (let index = 0; index < 4; index += 1)
        expect((await unguarded({ id: "A1" })).type).toBe("ok");
      expect((await guarded({ id: "A1" })).type).toBe("ok");
    });
    // Without a RunGuard nothing is detected at all.
    const none = await createAgent({
      model: looping(same(12)),
      tools: [counting("lookup").item],
    }).run("Go");
    expect(none.blocked).toEqual([]);
  });

  it("“A call that was waiting on an approver, or in a serialize_batch wait, when the run halted is refused too.”", async () => {
    const { item, counter } = counting("refund");
    let answer!: (value: "approve") => void;
    let asked!: () => void;
    const askedYet = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const waiting = guardTool(item, {
      gates: [policy([], { default: "ask" })],
      approver: () => {
        asked();
        return new Promise((done) => {
          answer = done;
        });
      },
    });
    await withRun({ agentId: "host" }, async (run) => {
      const pending = waiting({ id: "A1" });
      await askedYet;
      run.halt("operator_stop");
      answer("approve");
      const outcome = await pending;
      expect(outcome).toMatchObject({
        type: "refused",
        reason: "run_halted",
        decision: { refusedAt: "0.7:run_halted", details: { haltReason: "operator_stop" } },
      });
    });
    expect(counter.runs).toBe(0);
    // A batch: the first call of a turn halts the run; the calls after it in the same turn are refused.
    const refund = tool({
      name: "issue_refund",
      description: "Refund.",
      input: v.object({ amount: v.number() }),
      run: async () => "refunded",
    });
    const { item: lookup, counter: lookups } = counting("lookup");
    const batch = await createAgent({
      model: looping([
        [
          { name: "issue_refund", input: { amount: 5000 } },
          { name: "lookup", input: { id: "A1" } },
          { name: "lookup", input: { id: "A2" } },
        ],
      ]),
      tools: [refund, lookup],
      gates: [
        policy([deny("issue_refund", { when: argGt("amount", 1000) })]),
        runGuard({ irreversibleTools: ["issue_refund"] }),
      ],
    }).run("Refund");
    expect(batch.status).toBe("halted");
    expect(batch.blocked.map((call) => call.reason)).toEqual([
      "policy_deny",
      "run_halted",
      "run_halted",
    ]);
    expect(lookups.runs).toBe(0);
  });

  it("“A call already running when the run halts finishes.”", async () => {
    let release!: () => void;
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const slow = tool({
      name: "slow_export",
      description: "Export.",
      input: v.object({}),
      run: async () => {
        started();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return "exported";
      },
    });
    const guarded = guardTool(slow, { gates: [runGuard()] });
    await withRun({ agentId: "host" }, async (run) => {
      const pending = guarded({});
      await running;
      run.halt("operator_stop");
      release();
      expect(await pending).toMatchObject({ type: "ok", value: "exported" });
      expect((await guarded({})).type).toBe("refused");
    });
  });

  it("“The refusal's metadata names the halt reason.”", async () => {
    const { item } = counting("lookup");
    const guarded = guardTool(item, { gates: [runGuard()] });
    await withRun({ agentId: "host" }, async (run) => {
      run.halt("budget_exhausted_upstream");
      const outcome = await guarded({ id: "A1" });
      expect(outcome).toMatchObject({
        type: "refused",
        reason: "run_halted",
        decision: {
          refusedAt: "0.7:run_halted",
          details: { haltReason: "budget_exhausted_upstream" },
        },
      });
    });
  });

  it("“run.halted and run.halt_reason say the same to the host, and run.halt(reason) halts a run from host code.”", async () => {
    const { item, counter } = counting("lookup");
    const guarded = guardTool(item, { gates: [runGuard()] });
    await withRun({ agentId: "host" }, async (run) => {
      expect([run.halted, run.haltReason]).toEqual([false, undefined]);
      expect((await guarded({ id: "A1" })).type).toBe("ok");
      run.halt("maintenance");
      expect([run.halted, run.haltReason]).toEqual([true, "maintenance"]);
      expect(await guarded({ id: "A2" })).toMatchObject({ reason: "run_halted" });
    });
    expect(counter.runs).toBe(1);
    // In the loop, the result and the log say what the latch says.
    const store = memoryEventStore();
    const result = await createAgent({
      model: looping(same(12)),
      tools: [counting("lookup").item],
      store,
      gates: [runGuard()],
    }).run("Go");
    const halt = (await store.read(result.runId)).find((event) => event.type === "run-halt");
    expect(result.haltReason).toBe((halt as { reason: string }).reason);
  });

  it("“A halted run stays halted: start a new run to go on.”", async () => {
    const { item, counter } = counting("lookup");
    const store = memoryEventStore();
    const agent = createAgent({
      model: looping(same(12)),
      tools: [item],
      store,
      gates: [runGuard()],
    });
    const halted = await agent.run("Go");
    expect(halted.status).toBe("halted");
    const before = counter.runs;
    const resumed = await agent.resume(halted.runId);
    expect(resumed.status).toBe("halted");
    expect(counter.runs).toBe(before);
    // Halting twice keeps the first reason; a new run starts clean.
    await withRun({ agentId: "host" }, async (run) => {
      run.halt("first");
      run.halt("second");
      expect(run.haltReason).toBe("first");
    });
    const fresh = await createAgent({
      model: looping(same(2)),
      tools: [item],
      gates: [runGuard()],
    }).run("Go again");
    expect(fresh.status).toBe("completed");
  });
});
