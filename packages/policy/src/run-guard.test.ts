import { createAgent, type DenyDecision, guardTool, tool, withRun } from "@loopguard/core";
import { digestOf, RunState } from "@loopguard/core/plugin";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { policy } from "./policy.js";
import { argGt } from "./predicate.js";
import { allow, deny } from "./rule.js";
import { type RunGuardOptions, runGuard } from "./run-guard.js";

type Step = readonly [tool: string, args: Record<string, unknown>];

/** Feeds calls through the guard as the pipeline would: admitted calls join `run.calls`, refusals `run.refusals`. */
function simulate(steps: readonly Step[], options: RunGuardOptions = {}, run = runOf()) {
  const guard = runGuard(options);
  const decisions = steps.map(([name, args], index) => {
    const call = callOf(name, args, run);
    const decision = guard.check(call);
    if (decision.type === "allow")
      run.calls.push({ tool: name, argsDigest: digestOf(args), toolUseId: call.toolUseId });
    else
      run.refusals.push({
        tool: name,
        toolUseId: call.toolUseId,
        reason: decision.reason,
        decision: {
          outcome: "deny",
          passed: [],
          refusedAt: "2.3:run_loop",
          reason: decision.reason,
        },
      });
    return { index: index + 1, decision };
  });
  return decisions.filter((entry) => entry.decision.type !== "allow") as Array<{
    index: number;
    decision: DenyDecision;
  }>;
}

const repeat = <T>(items: readonly T[], times: number): T[] =>
  Array.from({ length: times }, () => items).flat();

describe("runGuard loop detection", () => {
  it("is a gate at step 2.3 named run_loop", () => {
    const guard = runGuard();
    expect(guard.name).toBe("run_loop");
    expect(guard.step).toBe("2.3");
    expect(guard.settings).toEqual({
      haltOn: ["kill_switch", "policy_indeterminate"],
      irreversibleTools: [],
      detectLoops: true,
      loopRepeats: 5,
      maxLoopPeriod: 5,
      noProgress: false,
    });
  });

  it("trips on the fifth time one call is repeated, and halts at the next loop", () => {
    const refused = simulate(repeat<Step>([["lookup_order", { order_id: "A1" }]], 7));
    expect(refused.map((entry) => entry.index)).toEqual([5, 6, 7]);
    expect(refused[0]!.decision).toMatchObject({
      reason: "loop_detected",
      details: { period: 1, repeats: 5 },
    });
    expect(refused[0]!.decision.halt).toBeUndefined();
    expect(refused[0]!.decision.fixHints).toContain("One more repeated loop ends the run.");
    expect(refused[1]!.decision).toMatchObject({
      reason: "run_halted",
      halt: true,
      haltReason: "loop_detected",
      details: { haltReason: "loop_detected", period: 1, tools: ["lookup_order"] },
    });
  });

  it("trips on the fifteenth call of a three-call cycle", () => {
    const cycle: Step[] = [
      ["lookup_order", { order_id: "A1" }],
      ["lookup_customer", { id: 7 }],
      ["check_stock", { sku: "X" }],
    ];
    const refused = simulate(repeat(cycle, 6));
    expect(refused[0]).toMatchObject({
      index: 15,
      decision: { reason: "loop_detected", details: { period: 3 } },
    });
  });

  it("never trips on the same tool with different arguments", () => {
    const steps: Step[] = Array.from({ length: 300 }, (_unused, index) => [
      "lookup_order",
      { order_id: `A${index}` },
    ]);
    expect(simulate(steps)).toEqual([]);
  });

  it("compares arguments canonically (key order does not matter)", () => {
    const refused = simulate([
      ["search", { q: "x", page: 1 }],
      ["search", { page: 1, q: "x" }],
      ["search", { q: "x", page: 1 }],
      ["search", { page: 1, q: "x" }],
      ["search", { q: "x", page: 1 }],
    ]);
    expect(refused.map((entry) => entry.index)).toEqual([5]);
  });

  it("does not count refused calls, and halts on the next completed loop after a warning", () => {
    const a: Step = ["a", {}];
    const b: Step = ["b", {}];
    // 4 a's, the 5th refused (warning), then the model moves on to b, loops on b: the 5th b halts.
    const refused = simulate([a, a, a, a, a, ...repeat([b], 5)]);
    expect(refused.map((entry) => [entry.index, entry.decision.halt ?? false])).toEqual([
      [5, false],
      [10, true],
    ]);
  });

  it("honours loopRepeats and maxLoopPeriod", () => {
    const cycle: Step[] = Array.from({ length: 6 }, (_unused, index) => [`t${index}`, {}]);
    expect(simulate(repeat(cycle, 10))).toEqual([]);
    expect(simulate(repeat(cycle, 10), { maxLoopPeriod: 6 })[0]!.index).toBe(30);
    expect(
      simulate(repeat<Step>([["a", {}]], 3), { loopRepeats: 2 }).map((entry) => entry.index),
    ).toEqual([2, 3]);
    expect(simulate(repeat<Step>([["a", {}]], 30), { detectLoops: false })).toEqual([]);
  });

  it("rejects settings out of range with a clear error", () => {
    expect(() => runGuard({ loopRepeats: 1 })).toThrow(
      /\[policy\] runGuard\(\{ loopRepeats \}\): loopRepeats must be an integer from 2 to 100 \(default 5\), got 1/,
    );
    expect(() => runGuard({ loopRepeats: 101 })).toThrow(/from 2 to 100/);
    expect(() => runGuard({ maxLoopPeriod: 0 })).toThrow(
      /maxLoopPeriod must be an integer from 1 to 10 \(default 5\), got 0/,
    );
    expect(() => runGuard({ maxLoopPeriod: 2.5 })).toThrow(/maxLoopPeriod/);
    expect(() => runGuard({ haltOn: ["Kill Switch"] })).toThrow(/snake_case/);
    expect(() => runGuard({ irreversibleTools: "issue_refund" as never })).toThrow(
      /array of tool globs/,
    );
  });

  it("refuses a call outside any run", () => {
    expect(runGuard().check(callOf("lookup_order"))).toMatchObject({
      type: "deny",
      reason: "run_guard_outside_run",
    });
  });

  it("decides which refusals halt: haltOn reasons and irreversible tools", () => {
    const guard = runGuard({ irreversibleTools: ["issue_*", "delete_customer"] });
    const refusal = (reason: string): DenyDecision => ({ type: "deny", reason, message: "" });
    expect(guard.haltOnRefusal(callOf("lookup"), refusal("kill_switch"))).toBe(true);
    expect(guard.haltOnRefusal(callOf("lookup"), refusal("policy_indeterminate"))).toBe(true);
    expect(guard.haltOnRefusal(callOf("lookup"), refusal("policy_deny"))).toBe(false);
    expect(guard.haltOnRefusal(callOf("issue_refund"), refusal("policy_deny"))).toBe(true);
    expect(guard.haltOnRefusal(callOf("delete_customer"), refusal("rate_limited"))).toBe(true);
    expect(
      runGuard({ haltOn: ["rate_limited"] }).haltOnRefusal(callOf("x"), refusal("kill_switch")),
    ).toBe(false);
  });

  it("its own warnings do not halt on an irreversible tool; any other refusal of one does", () => {
    const guard = runGuard({ irreversibleTools: ["issue_*"] });
    const call = callOf("issue_refund", { amount: 1 }, runOf());
    const refusal = (reason: string) => ({ type: "deny" as const, reason, message: "" });
    expect(guard.haltOnRefusal(call, refusal("loop_detected"))).toBe(false);
    expect(guard.haltOnRefusal(call, refusal("no_progress"))).toBe(false);
    expect(guard.haltOnRefusal(call, refusal("policy_deny"))).toBe(true);
    expect(guard.haltOnRefusal(call, refusal("tainted_argument"))).toBe(true);
  });

  it("digests every setting", () => {
    expect(runGuard().digest()).toBe(runGuard({ loopRepeats: 5 }).digest());
    expect(runGuard().digest()).not.toBe(runGuard({ loopRepeats: 6 }).digest());
    expect(runGuard().digest()).not.toBe(runGuard({ irreversibleTools: ["x"] }).digest());
  });

  it("refuses exactly the calls that complete a repeated block, and never a sequence without one (property)", () => {
    const stepArb = fc
      .tuple(fc.constantFrom("a", "b", "c"), fc.integer({ min: 0, max: 1 }))
      .map(([name, arg]): Step => [name, { arg }]);
    fc.assert(
      fc.property(
        fc.array(stepArb, { maxLength: 60 }),
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        (steps, loopRepeats, maxLoopPeriod) => {
          const refused = new Set(
            simulate(steps, { loopRepeats, maxLoopPeriod }).map((entry) => entry.index),
          );
          // Reference: brute force over the admitted calls plus the current one.
          const admitted: string[] = [];
          steps.forEach(([name, args], index) => {
            const sequence = [...admitted, `${name}:${JSON.stringify(args)}`];
            let loops = false;
            for (let period = 1; period <= maxLoopPeriod && !loops; period += 1) {
              const length = period * loopRepeats;
              if (sequence.length < length) continue;
              const tail = sequence.slice(-length);
              loops = tail.every(
                (item, position) => position < period || item === tail[position - period],
              );
            }
            expect(refused.has(index + 1)).toBe(loops);
            if (!loops) admitted.push(sequence[sequence.length - 1]!);
          });
        },
      ),
      { numRuns: 400 },
    );
  });

  it("never trips on sequences with no block repeated loopRepeats times (property)", () => {
    // Square-free words over three letters have no block repeated even twice.
    const thueMorseDifferences = (length: number) => {
      const bit = (n: number) => n.toString(2).split("1").length % 2;
      return Array.from({ length }, (_unused, n) => ["a", "b", "c"][bit(n + 1) - bit(n) + 1]!);
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 2, max: 100 }),
        fc.integer({ min: 1, max: 10 }),
        (offset, length, loopRepeats, maxLoopPeriod) => {
          const word = thueMorseDifferences(offset + length).slice(offset);
          expect(
            simulate(
              word.map((letter): Step => [letter, {}]),
              { loopRepeats, maxLoopPeriod },
            ),
          ).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("keeps its state per run and rebuilds it from run.calls (resume)", () => {
    const run = runOf();
    for (let index = 0; index < 4; index += 1)
      run.calls.push({ tool: "a", argsDigest: digestOf({}), toolUseId: `t${index}` });
    expect(runGuard().check(callOf("a", {}, run))).toMatchObject({
      type: "deny",
      reason: "loop_detected",
    });
    expect(runGuard().check(callOf("a", {}, runOf()))).toEqual({ type: "allow" });
    const fresh = new RunState({ runId: "r", agentId: "a" });
    expect(runGuard().check(callOf("a", {}, fresh))).toEqual({ type: "allow" });
  });
});

const lookupOrder = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: async ({ order_id }) => ({ order_id, status: "delivered" }),
});

function looping(calls: ReadonlyArray<{ name: string; input: Record<string, unknown> }>) {
  return scriptedModel((_request, call) => {
    const next = calls[call - 1];
    if (!next) return { content: "I give up." };
    return {
      content: [{ type: "tool_use", id: `toolu_${call}`, name: next.name, input: next.input }],
    };
  });
}

describe("runGuard through a real loop", () => {
  it("refuses the fifth repeat at 2.3:run_loop, then halts the run at the next loop", async () => {
    let executed = 0;
    const counted = tool({
      ...lookupOrder,
      name: "lookup_order",
      description: "Look up an order.",
      input: v.object({ order_id: v.string() }),
      run: async () => ++executed,
    });
    const model = looping(
      Array.from({ length: 10 }, () => ({ name: "lookup_order", input: { order_id: "A1001" } })),
    );
    const store = memoryEventStore();
    const agent = createAgent({
      model,
      tools: [counted],
      store,
      gates: [policy([allow("lookup_*")], { default: "deny" }), runGuard()],
    });
    const result = await agent.run("Where is A1001?");
    expect(result.status).toBe("halted");
    expect(result.haltReason).toBe("loop_detected");
    expect(executed).toBe(4);
    expect(result.blocked).toHaveLength(2);
    expect(result.blocked[0]).toMatchObject({
      tool: "lookup_order",
      reason: "loop_detected",
      decision: {
        refusedAt: "2.3:run_loop",
        passed: ["0.7:run_halted", "1:validation", "2:policy"],
      },
    });
    expect(result.blocked[0]!.decision.halted).toBeUndefined();
    expect(result.blocked[1]).toMatchObject({
      reason: "run_halted",
      decision: {
        refusedAt: "2.3:run_loop",
        halted: true,
        details: { haltReason: "loop_detected" },
      },
    });
    // The model saw the warning as a tool result.
    expect(JSON.stringify(model.requests[5]!.messages.at(-1))).toContain(
      "One more repeated loop ends the run.",
    );
    const events = await store.read(result.runId);
    expect(events.filter((event) => event.type === "run-halt")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: "run-end", status: "halted" });
    expect(model.calls).toBe(6);
  });

  it("refuses the fifteenth call of a three-call cycle", async () => {
    const names = ["lookup_order", "lookup_customer", "check_stock"];
    const tools = names.map((name) =>
      tool({ name, description: name, input: v.object({ id: v.string() }), run: async () => "ok" }),
    );
    const model = looping(
      Array.from({ length: 15 }, (_unused, index) => ({
        name: names[index % 3]!,
        input: { id: "1" },
      })),
    );
    const result = await createAgent({ model, tools, gates: [runGuard()] }).run("Check everything");
    expect(result.status).toBe("completed");
    expect(result.blocked).toHaveLength(1);
    expect(result.blocked[0]).toMatchObject({
      tool: "check_stock",
      toolUseId: "toolu_15",
      reason: "loop_detected",
      decision: { refusedAt: "2.3:run_loop" },
    });
  });

  it("never trips when the arguments change", async () => {
    const model = looping(
      Array.from({ length: 20 }, (_unused, index) => ({
        name: "lookup_order",
        input: { order_id: `A${index}` },
      })),
    );
    const result = await createAgent({ model, tools: [lookupOrder], gates: [runGuard()] }).run(
      "Check orders",
    );
    expect(result.status).toBe("completed");
    expect(result.blocked).toEqual([]);
  });

  it("halts the run when an irreversible tool is refused", async () => {
    const refund = tool({
      name: "issue_refund",
      description: "Refund.",
      input: v.object({ amount: v.number() }),
      run: async () => "refunded",
    });
    const model = looping([
      { name: "issue_refund", input: { amount: 5000 } },
      { name: "issue_refund", input: { amount: 10 } },
    ]);
    const result = await createAgent({
      model,
      tools: [refund],
      gates: [
        policy([deny("issue_refund", { when: argGt("amount", 1000) })]),
        runGuard({ irreversibleTools: ["issue_*"] }),
      ],
    }).run("Refund");
    expect(result.status).toBe("halted");
    expect(result.haltReason).toBe("policy_deny");
    expect(result.blocked).toHaveLength(1);
    expect(result.blocked[0]!.decision).toMatchObject({ refusedAt: "2:policy", halted: true });
  });
});

describe("runGuard under guardTool and withRun", () => {
  it("warns on the fifth repeat, halts at the next, and then core refuses as run_halted", async () => {
    const guarded = guardTool(lookupOrder, { gates: [runGuard()] });
    await withRun({ agentId: "assistant" }, async (run) => {
      const outcomes = [];
      for (let index = 0; index < 7; index += 1)
        outcomes.push(await guarded({ order_id: "A1001" }));
      expect(
        outcomes.map((outcome) => (outcome.type === "refused" ? outcome.reason : outcome.type)),
      ).toEqual(["ok", "ok", "ok", "ok", "loop_detected", "run_halted", "run_halted"]);
      expect(outcomes[4]).toMatchObject({ decision: { refusedAt: "2.3:run_loop" } });
      expect(outcomes[5]).toMatchObject({ decision: { refusedAt: "2.3:run_loop", halted: true } });
      expect(outcomes[6]).toMatchObject({ decision: { refusedAt: "0.7:run_halted" } });
      expect(run.halted).toBe(true);
      expect(run.haltReason).toBe("loop_detected");
    });
  });

  it("refuses calls outside any run", async () => {
    const guarded = guardTool(lookupOrder, { gates: [runGuard()] });
    expect(await guarded({ order_id: "A1001" })).toMatchObject({
      type: "refused",
      reason: "run_guard_outside_run",
      decision: { refusedAt: "2.3:run_loop" },
    });
  });

  it("keeps separate runs separate", async () => {
    const guarded = guardTool(lookupOrder, { gates: [runGuard()] });
    const results = await Promise.all(
      [1, 2].map((agent) =>
        withRun({ agentId: `agent${agent}` }, async () => {
          const outcomes = [];
          for (let index = 0; index < 4; index += 1)
            outcomes.push((await guarded({ order_id: "A1001" })).type);
          return outcomes;
        }),
      ),
    );
    expect(results).toEqual([
      ["ok", "ok", "ok", "ok"],
      ["ok", "ok", "ok", "ok"],
    ]);
  });
});
