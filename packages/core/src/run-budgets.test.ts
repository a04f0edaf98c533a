import { describe, expect, it } from "vitest";
import type { RunBudget, RunBudgetRun } from "./contracts/run-budget.js";
import { createAgent, InvalidArgumentError } from "./index.js";
import {
  lookupOrderTool,
  memoryEventStore,
  memoryLimitStore,
  toolLoopModel,
} from "./testing/index.js";

const lookup = lookupOrderTool;

/** A model that calls a tool `calls` times, then answers. */
const model = (calls: number, outputTokens = 50) =>
  toolLoopModel(calls, { input: 100, call: outputTokens, answer: 20 });

/**
 * A run budget on a LimitStore counter: at most `capUsd` over all runs, reservations per run
 * and step (a plain version of policy's tenantBudget, to test the loop's side alone).
 */
function sharedBudget(capUsd: number, options: { maxRuns?: number; failing?: () => boolean } = {}) {
  const store = memoryLimitStore();
  const counter = { cap: capUsd, windowStart: 0, windowMs: 1e15 };
  const log: string[] = [];
  const check = () => {
    if (options.failing?.()) throw new Error("store down");
  };
  const budget: RunBudget & { log: string[]; used: () => Promise<number> } = {
    name: "shared",
    log,
    async used() {
      return (await store.reserve("usd", counter, 0, { id: "probe", now: 1 })).used;
    },
    async start(run: RunBudgetRun) {
      check();
      if (options.maxRuns === undefined) return { ok: true };
      const result = await store.reserve(
        "runs",
        { cap: options.maxRuns, windowStart: 0, windowMs: 1e15 },
        1,
        {
          id: run.runId,
          now: 1,
        },
      );
      return result.ok
        ? { ok: true }
        : { ok: false, reason: "runs", message: `[test] ${options.maxRuns} runs a day` };
    },
    async reserve(run, step) {
      check();
      const result = await store.reserve("usd", counter, step.usd, {
        id: `${run.runId}:${step.step}`,
        now: 1,
      });
      log.push(`reserve ${step.step} ${result.ok}`);
      return result.ok
        ? { ok: true }
        : {
            ok: false,
            reason: "shared",
            message: `[test] $${capUsd} shared`,
            availableUsd: capUsd - result.used,
          };
    },
    async settle(run, step) {
      check();
      log.push(`settle ${step.step}`);
      await store.settle("usd", `${run.runId}:${step.step}`, step.usd, { now: 1 });
    },
  };
  return budget;
}

describe("run budgets (createAgent({ budgets }))", () => {
  it("every step is reserved before its call and settled at its cost; the settled total is the run's cost", async () => {
    const budget = sharedBudget(10);
    const result = await createAgent({ model: model(2), tools: [lookup], budgets: [budget] }).run(
      "go",
    );
    expect(result.status).toBe("completed");
    expect(budget.log).toEqual([
      "reserve 1 true",
      "settle 1",
      "reserve 2 true",
      "settle 2",
      "reserve 3 true",
      "settle 3",
    ]);
    expect(await budget.used()).toBeCloseTo(result.costUsd, 12);
  });

  it("a run the budget refuses at start is stopped before any model call, with the budget's reason", async () => {
    const budget = sharedBudget(10, { maxRuns: 1 });
    const scripted = model(0);
    const agent = createAgent({ model: scripted, tools: [lookup], budgets: [budget] });
    expect((await agent.run("first")).status).toBe("completed");
    const second = await agent.run("second");
    expect(second).toMatchObject({
      status: "stopped",
      why: "run_budget",
      error: "[test] 1 runs a day",
    });
    expect(scripted.calls).toBe(1);
  });

  it("a step that could cross the shared cap is never taken (predictive): the run stops, spend stays under", async () => {
    // Each step's worst case is about 4096 output tokens at $10/M = $0.04; the cap allows ~2 steps.
    const budget = sharedBudget(0.09);
    const scripted = model(50, 3000);
    const result = await createAgent({
      model: scripted,
      tools: [lookup],
      budgets: [budget],
      maxTokens: 4096,
    }).run("go");
    expect(result).toMatchObject({
      status: "stopped",
      why: "run_budget",
      error: "[test] $0.09 shared",
    });
    expect(await budget.used()).toBeLessThanOrEqual(0.09);
    expect(await budget.used()).toBeCloseTo(result.costUsd, 12);
    // The last steps shrank max_tokens to what was left before giving up.
    const sizes = scripted.requests.map((request) => request.max_tokens);
    expect(sizes[0]).toBe(4096);
    expect(Math.min(...sizes)).toBeLessThan(4096);
  });

  it("a budget that cannot be checked pauses the run (no step taken, the run is not lost); resume finishes it", async () => {
    let down = true;
    const budget = sharedBudget(10, { failing: () => down });
    const store = memoryEventStore();
    const scripted = model(1);
    const agent = createAgent({ model: scripted, tools: [lookup], budgets: [budget], store });
    const paused = await agent.run("go");
    expect(paused.status).toBe("running");
    expect(paused.why).toBe("run_budget_unavailable");
    expect(paused.error).toMatch(
      /\[core\] run budget shared could not be checked.*store down.*paused/,
    );
    expect(scripted.calls).toBe(0);
    down = false;
    const resumed = await agent.resume(paused.runId);
    expect(resumed.status).toBe("completed");
    expect(await budget.used()).toBeCloseTo(resumed.costUsd, 12);
  });

  it("a step whose settle failed (a crash after the response) is settled once from the log on resume", async () => {
    let failSettles = 0;
    const budget = sharedBudget(10);
    const settle = budget.settle.bind(budget);
    budget.settle = async (run, step) => {
      if (failSettles > 0) {
        failSettles -= 1;
        throw new Error("connection lost");
      }
      return settle(run, step);
    };
    const store = memoryEventStore();
    const agent = createAgent({ model: model(1), tools: [lookup], budgets: [budget], store });
    failSettles = 1;
    const first = await agent.run("go");
    expect(first.why).toBe("run_budget_unavailable");
    const resumed = await agent.resume(first.runId);
    expect(resumed.status).toBe("completed");
    // Every reservation settled, at the cost the log holds: nothing leaked, nothing twice.
    expect(await budget.used()).toBeCloseTo(resumed.costUsd, 12);
  });

  it("budgets that are not run budgets are refused at construction", () => {
    expect(() => createAgent({ model: model(0), tools: [], budgets: {} as never })).toThrow(
      InvalidArgumentError,
    );
    expect(() =>
      createAgent({ model: model(0), tools: [], budgets: [{ name: "x" }] as never }),
    ).toThrow(/\[core\] createAgent: budgets\[0\] is not a run budget/);
  });
});
