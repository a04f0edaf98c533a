import type { GateDecision } from "@loopguard/core";
import { digestOf, type RunState } from "@loopguard/core/plugin";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { nearKeyOf } from "./no-progress.js";
import { type RunGuardOptions, runGuard } from "./run-guard.js";

type Step = {
  tool: string;
  args: Record<string, unknown>;
  /** What the tool returns when the call is admitted. */
  result?: string;
  /** A later step refuses the call (taint, approval, ...) after the RunGuard let it pass. */
  refusedLater?: string;
};

/**
 * Feeds calls through the guard as the pipeline would: admitted calls join `run.calls` (and
 * their result `run.outputs`), refusals `run.refusals`; an ask is approved.
 */
function simulate(steps: readonly Step[], options: RunGuardOptions, run: RunState = runOf()) {
  const guard = runGuard(options);
  const decisions: GateDecision[] = [];
  for (const step of steps) {
    const call = callOf(step.tool, step.args, run);
    const decision = guard.check(call);
    decisions.push(decision);
    const refusedReason =
      decision.type === "deny"
        ? decision.reason
        : decision.type === "allow"
          ? step.refusedLater
          : undefined;
    if (refusedReason) {
      const halts =
        decision.type === "deny" && decision.halt === true
          ? (decision.haltReason ?? decision.reason)
          : guard.haltOnRefusal(call, {
              type: "deny",
              reason: refusedReason,
              message: "",
            });
      run.refusals.push({
        tool: step.tool,
        toolUseId: call.toolUseId,
        reason: refusedReason,
        decision: { outcome: "deny", passed: [], refusedAt: "2.3:run_loop", reason: refusedReason },
      });
      if (halts) run.halt(typeof halts === "string" ? halts : refusedReason);
      continue;
    }
    run.calls.push({ tool: step.tool, argsDigest: digestOf(step.args), toolUseId: call.toolUseId });
    run.outputs.push({
      tool: step.tool,
      toolUseId: call.toolUseId,
      text: `<tool_output tool="${step.tool}" call="${call.toolUseId}">\n${step.result ?? `result of ${call.toolUseId}`}\n</tool_output>`,
    });
  }
  return decisions;
}

const summary = (decisions: GateDecision[]) =>
  decisions.map((decision) => (decision.type === "allow" ? "allow" : decision.reason));
const on: RunGuardOptions = { noProgress: true };

describe("no progress: off by default", () => {
  it("exact repeats are left to the loop detector", () => {
    const steps = Array.from({ length: 6 }, () => ({ tool: "job_status", args: { job: "J7" } }));
    expect(
      summary(simulate(steps, { noProgress: { sameResults: false }, detectLoops: false })),
    ).toEqual(["allow", "allow", "allow", "allow", "allow", "allow"]);
  });

  it("the page's 'different arguments never trip' holds without noProgress", () => {
    const steps = Array.from({ length: 30 }, (_unused, index) => ({
      tool: "issue_refund",
      args: { order_id: "A1001", amount: 89.99 + index * 0.01 },
      result: "refund failed: processor busy",
    }));
    expect(summary(simulate(steps, {})).every((reason) => reason === "allow")).toBe(true);
  });
});

describe("no progress: near repeats", () => {
  it("a refund whose amount grows by 0.01 each call is warned, then asked, then halted", () => {
    const steps = Array.from({ length: 30 }, (_unused, index) => ({
      tool: "issue_refund",
      args: { order_id: "A1001", amount: 89.99 + index * 0.01 },
    }));
    const run = runOf();
    const decisions = summary(simulate(steps, on, run));
    expect(decisions.slice(0, 3)).toEqual(["allow", "allow", "allow"]);
    expect(decisions[3]).toBe("no_progress");
    expect(decisions[4]).toBe("no_progress_approval");
    expect(decisions[5]).toBe("run_halted");
    expect(run.halted).toBe(true);
    expect(run.haltReason).toBe("no_progress");
  });

  it("a query with one more trailing space, or another case, each time is a near repeat", () => {
    const steps = Array.from({ length: 10 }, (_unused, index) => ({
      tool: "search_kb",
      args: { query: `${index % 2 ? "Refund Policy" : "refund policy"}${" ".repeat(index)}` },
    }));
    const decisions = simulate(steps, on);
    expect(summary(decisions)[3]).toBe("no_progress");
    expect(decisions[3]).toMatchObject({ details: { signal: "near_repeat", count: 4 } });
  });

  it("the warning carries fix hints, the ask and the halt say why", () => {
    const steps = Array.from({ length: 6 }, (_unused, index) => ({
      tool: "t",
      args: { q: `x${" ".repeat(index)}` },
    }));
    const decisions = simulate(steps, { noProgress: { nearRepeats: 2 }, detectLoops: false });
    expect(decisions[1]).toMatchObject({ type: "deny", reason: "no_progress" });
    expect((decisions[1] as { fixHints: string[] }).fixHints.join(" ")).toMatch(/Change approach/);
    expect(decisions[2]).toMatchObject({ type: "ask", reason: "no_progress_approval" });
    expect(decisions[3]).toMatchObject({
      type: "deny",
      reason: "run_halted",
      halt: true,
      haltReason: "no_progress",
      details: { haltReason: "no_progress", signal: "near_repeat" },
    });
  });

  it("numbers further apart than the tolerance, and different strings, are progress (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: 5, maxLength: 30 }),
        (pages) => {
          // Paging: each call asks for a page at least 2% away from the one before.
          const steps: Step[] = [];
          let offset = 100;
          for (const step of pages) {
            offset += Math.max(step, Math.ceil(offset * 0.02));
            steps.push({ tool: "list_orders", args: { offset, status: "open" } });
          }
          return summary(simulate(steps, on)).every((reason) => reason === "allow");
        },
      ),
      { numRuns: 100 },
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z]{3,12}$/), { minLength: 5, maxLength: 20 }),
        (queries) =>
          summary(
            simulate(
              queries.map((query) => ({ tool: "search_kb", args: { query } })),
              on,
            ),
          ).every((reason) => reason === "allow"),
      ),
      { numRuns: 100 },
    );
  });

  it("near keys ignore key order, case and spacing but keep structure", () => {
    expect(nearKeyOf("t", { a: "X  y", b: 1 }).shape).toBe(
      nearKeyOf("t", { b: 2, a: " x y" }).shape,
    );
    expect(nearKeyOf("t", { a: ["x"] }).shape).not.toBe(nearKeyOf("t", { a: "x" }).shape);
    expect(nearKeyOf("t", { a: 1 }).shape).not.toBe(nearKeyOf("u", { a: 1 }).shape);
  });
});

describe("no progress: the same result again and again", () => {
  it("a tool that keeps returning the same answer is flagged when called again", () => {
    const steps = Array.from({ length: 8 }, (_unused, index) => ({
      tool: "track_parcel",
      args: { id: `P${index}` },
      result: "status: unknown",
    }));
    const decisions = simulate(steps, on);
    expect(summary(decisions).slice(0, 5)).toEqual([
      "allow",
      "allow",
      "allow",
      "allow",
      "no_progress",
    ]);
    expect(decisions[4]).toMatchObject({ details: { signal: "same_result", count: 4 } });
  });

  it("a different result resets the count", () => {
    const steps = Array.from({ length: 12 }, (_unused, index) => ({
      tool: "track_parcel",
      args: { id: `P${index}` },
      result: index % 3 === 2 ? `moved ${index}` : "status: unknown",
    }));
    expect(summary(simulate(steps, on)).every((reason) => reason === "allow")).toBe(true);
  });
});

describe("no progress: oscillation", () => {
  it("A-B-A-B with arguments that drift is flagged after three cycles", () => {
    const steps: Step[] = [];
    for (let index = 0; index < 8; index += 1)
      steps.push(
        index % 2 === 0
          ? { tool: "set_plan", args: { plan: index % 4 === 0 ? "basic" : "Basic " } }
          : { tool: "get_plan", args: { account: "C1" } },
      );
    const decisions = simulate(steps, on);
    expect(summary(decisions).slice(0, 6)).toEqual([
      "allow",
      "allow",
      "allow",
      "allow",
      "allow",
      "no_progress",
    ]);
    expect(decisions[5]).toMatchObject({ details: { signal: "oscillation", count: 3 } });
  });
});

describe("no progress: a streak of refusals", () => {
  it("calls refused after the RunGuard again and again are flagged, then halted", () => {
    const steps = Array.from({ length: 12 }, (_unused, index) => ({
      tool: "send_email",
      args: { to: `user${index}@evil.example` },
      refusedLater: "tainted_argument",
    }));
    const run = runOf();
    const decisions = summary(simulate(steps, { noProgress: { refusalStreak: 3 } }, run));
    expect(decisions.slice(0, 4)).toEqual(["allow", "allow", "allow", "no_progress"]);
    expect(run.halted).toBe(true);
    expect(run.haltReason).toBe("no_progress");
  });

  it("refusals before step 2.3 halt the run at twice the streak (haltOnRefusal)", () => {
    const guard = runGuard({ noProgress: { refusalStreak: 3 } });
    const run = runOf();
    const verdicts: Array<boolean | string> = [];
    for (let index = 0; index < 6; index += 1) {
      const call = callOf("send_email", { to: "x@evil.example" }, run);
      verdicts.push(
        guard.haltOnRefusal(call, { type: "deny", reason: "policy_deny", message: "" }),
      );
      run.refusals.push({
        tool: "send_email",
        toolUseId: call.toolUseId,
        reason: "policy_deny",
        decision: { outcome: "deny", passed: [], refusedAt: "2:policy", reason: "policy_deny" },
      });
    }
    expect(verdicts).toEqual([false, false, false, false, false, "no_progress"]);
  });

  it("an admitted call ends the streak", () => {
    const steps: Step[] = [];
    for (let index = 0; index < 12; index += 1)
      steps.push({
        tool: "send_email",
        args: { to: `u${index}@x.example` },
        ...(index % 3 ? { refusedLater: "tainted_argument" } : {}),
      });
    expect(
      summary(simulate(steps, { noProgress: { refusalStreak: 3 } })).every(
        (reason) => reason === "allow",
      ),
    ).toBe(true);
  });
});

describe("no progress: settings", () => {
  it("are checked and digested", () => {
    expect(() => runGuard({ noProgress: { nearRepeats: 1 } })).toThrow(
      /\[policy\] runGuard\(\{ noProgress: \{ nearRepeats \} \}\): nearRepeats must be false or an integer from 2 to 100/,
    );
    expect(() => runGuard({ noProgress: { numberTolerance: Number.NaN } })).toThrow(
      /numberTolerance/,
    );
    expect(() => runGuard({ noProgress: { nearRepeat: 3 } as never })).toThrow(
      /unknown setting "nearRepeat"/,
    );
    expect(() => runGuard({ noProgress: "yes" as never })).toThrow(
      /noProgress must be true, false or an object/,
    );
    expect(runGuard().digest()).toBe(runGuard({ noProgress: false }).digest());
    expect(runGuard().digest()).not.toBe(runGuard({ noProgress: true }).digest());
    expect(runGuard({ noProgress: true }).digest()).not.toBe(
      runGuard({ noProgress: { nearRepeats: 5 } }).digest(),
    );
    expect(runGuard({ noProgress: { sameResults: false } }).settings.noProgress).toMatchObject({
      sameResults: false,
      nearRepeats: 4,
    });
  });
});
