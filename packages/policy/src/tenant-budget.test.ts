import { createAgent, InvalidArgumentError, type LimitStore } from "@loopguard/core";
import { lookupOrderTool, memoryLimitStore, toolLoopModel } from "@loopguard/core/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { tenantBudget } from "./tenant-budget.js";

const lookup = lookupOrderTool;

/** A model that calls a tool `calls` times (each answer `output` tokens), then answers. */
const model = (calls: number, output = 50) =>
  toolLoopModel(calls, { input: 200, call: output, answer: 10 });

const as = (tenant: string) => ({ context: { attributes: { tenant } } });

describe("tenantBudget", () => {
  it("caps a tenant's runs per day across agents sharing the store; other tenants are not affected", async () => {
    const store = memoryLimitStore();
    const budget = tenantBudget({ store, perDay: { maxRuns: 2 } });
    const agents = [0, 1].map(() =>
      createAgent({ model: model(0), tools: [lookup], budgets: [budget] }),
    );
    expect((await agents[0]!.run("a", as("acme"))).status).toBe("completed");
    expect((await agents[1]!.run("b", as("acme"))).status).toBe("completed");
    const third = await agents[0]!.run("c", as("acme"));
    expect(third.status).toBe("stopped");
    expect(third.why).toBe("run_budget");
    expect(third.steps).toBe(0);
    expect(third.error).toMatch(
      /\[policy\] tenantBudget: tenant acme has started its 2 runs for \d{4}-\d\d-\d\d \(UTC\)/,
    );
    expect((await agents[1]!.run("d", as("globex"))).status).toBe("completed");
  });

  it("property: a tenant's spend over many runs never crosses maxUsd; a stopped run says why", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.01, max: 0.3, noNaN: true }),
        fc.array(
          fc.record({
            calls: fc.integer({ min: 0, max: 6 }),
            output: fc.integer({ min: 1, max: 4000 }),
          }),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        async (maxUsd, runs) => {
          const store = memoryLimitStore();
          const budget = tenantBudget({ store, perDay: { maxUsd } });
          let spent = 0;
          for (const run of runs) {
            const result = await createAgent({
              model: model(run.calls, run.output),
              tools: [lookup],
              budgets: [budget],
              maxTokens: 4000,
            }).run("go", as("acme"));
            spent += result.costUsd;
            if (result.status === "stopped" && result.why !== "max_tokens")
              expect({ why: result.why, error: result.error }).toMatchObject({
                why: "run_budget",
                error: expect.stringMatching(/would cross its \$/),
              });
            else if (result.status !== "stopped") expect(result.status).toBe("completed");
          }
          expect(spent).toBeLessThanOrEqual(maxUsd + 1e-9);
          const day = budget.dayOf(Date.now());
          const held = await store.reserve(
            budget.keysOf("acme").usd,
            { cap: maxUsd, windowStart: day.start, windowMs: day.end - day.start },
            0,
            { id: "probe", now: Date.now() },
          );
          // Every reservation settled at the real cost: what the store holds is what was spent.
          expect(held.used).toBeCloseTo(spent, 9);
        },
      ),
      { numRuns: 25 },
    );
  });

  it("a step counts on the day it is taken: a run going on past midnight meets the new day's cap", async () => {
    const store = memoryLimitStore();
    const budget = tenantBudget({ store, perDay: { maxUsd: 0.05 } });
    const midnight = Date.UTC(2026, 11, 2);
    // The tenant's new day is already spent by other runs.
    const day2 = budget.dayOf(midnight);
    await store.reserve(
      budget.keysOf("acme").usd,
      { cap: 0.05, windowStart: day2.start, windowMs: day2.end - day2.start },
      0.05,
      { id: "other", now: midnight },
    );
    let clock = midnight - 30_000;
    const now = () => {
      clock += 20_000;
      return clock;
    };
    const scripted = model(3);
    const result = await createAgent({
      model: scripted,
      tools: [lookup],
      budgets: [budget],
      now,
    }).run("go", as("acme"));
    expect(result.status).toBe("stopped");
    expect(result.error).toMatch(/spend for 2026-12-02 \(UTC\) would cross/);
  });

  it("a one-step run costs the store 2 round trips (its start and first step in one batch, then the settle), and the caps still hold", async () => {
    const inner = memoryLimitStore();
    const calls: string[] = [];
    const counting =
      <A extends unknown[], R>(name: string, call: (...args: A) => R) =>
      (...args: A): R => {
        calls.push(name);
        return call(...args);
      };
    const counted: LimitStore = {
      name: "counted",
      take: counting("take", inner.take),
      refund: counting("refund", inner.refund),
      reserve: counting("reserve", inner.reserve),
      settle: counting("settle", inner.settle),
      batch: counting("batch", inner.batch!),
    };
    const budget = tenantBudget({ store: counted, perDay: { maxUsd: 5, maxRuns: 1 } });
    const agent = createAgent({ model: model(0), tools: [lookup], budgets: [budget] });
    expect((await agent.run("a", as("acme"))).status).toBe("completed");
    expect(calls).toEqual(["batch", "settle"]);
    // The batch was all or nothing: the second run's start is refused, and says why.
    calls.length = 0;
    const second = await agent.run("b", as("acme"));
    expect(second.status).toBe("stopped");
    expect(second.error).toMatch(/tenant acme has started its 1 runs/);
    expect(calls).toEqual(["batch", "reserve"]);
  });

  it("a run without a tenant is refused (the budget cannot tell whose day it is)", async () => {
    const budget = tenantBudget({ store: memoryLimitStore(), perDay: { maxUsd: 1 } });
    const result = await createAgent({ model: model(0), tools: [lookup], budgets: [budget] }).run(
      "go",
    );
    expect(result.status).toBe("stopped");
    expect(result.error).toMatch(/has no valid tenant.*context\.attributes\.tenant/);
  });

  it("a store that fails pauses the run before any step, with a reason; the run is not lost", async () => {
    const store = memoryLimitStore();
    let down = true;
    const failing = {
      ...store,
      name: "flaky",
      reserve: (...args: Parameters<typeof store.reserve>) =>
        down
          ? Promise.reject(new Error("[checkpoint] cannot reach PostgreSQL"))
          : store.reserve(...args),
      // Down is down for every call (a run's start and first step go in one batch).
      batch: (...args: Parameters<NonNullable<typeof store.batch>>) =>
        down
          ? Promise.reject(new Error("[checkpoint] cannot reach PostgreSQL"))
          : store.batch!(...args),
    };
    const scripted = model(0);
    const agent = createAgent({
      model: scripted,
      tools: [lookup],
      budgets: [tenantBudget({ store: failing, perDay: { maxUsd: 1 } })],
    });
    const paused = await agent.run("go", as("acme"));
    expect(paused).toMatchObject({ status: "running", why: "run_budget_unavailable" });
    expect(paused.error).toMatch(/cannot reach PostgreSQL/);
    expect(scripted.calls).toBe(0);
    down = false;
    expect((await agent.resume(paused.runId)).status).toBe("completed");
  });

  it("property: a day is the calendar day in the time zone (23 to 25 hours around DST)", () => {
    for (const timeZone of [
      "UTC",
      "America/New_York",
      "Europe/Paris",
      "Asia/Kolkata",
      "Australia/Lord_Howe",
    ]) {
      const budget = tenantBudget({ store: memoryLimitStore(), perDay: { maxRuns: 1 }, timeZone });
      const dateIn = new Intl.DateTimeFormat("en-CA", {
        timeZone,
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
      });
      fc.assert(
        fc.property(fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) }), (at) => {
          const day = budget.dayOf(at);
          expect(day.start).toBeLessThanOrEqual(at);
          expect(at).toBeLessThan(day.end);
          expect(dateIn.format(at)).toBe(day.day);
          expect(dateIn.format(day.start)).toBe(day.day);
          expect(dateIn.format(day.start - 1)).not.toBe(day.day);
          expect([23, 23.5, 24, 24.5, 25]).toContain((day.end - day.start) / 3_600_000);
        }),
        { numRuns: 300 },
      );
    }
    const ny = tenantBudget({
      store: memoryLimitStore(),
      perDay: { maxRuns: 1 },
      timeZone: "America/New_York",
    });
    expect(ny.dayOf(Date.UTC(2026, 2, 8, 12)).end - ny.dayOf(Date.UTC(2026, 2, 8, 12)).start).toBe(
      23 * 3_600_000,
    );
    expect(ny.dayOf(Date.UTC(2026, 11, 2, 3)).day).toBe("2026-12-01");
  });

  it("refuses bad caps, stores and time zones at construction with a [policy] error", () => {
    const store = memoryLimitStore();
    for (const perDay of [
      { maxUsd: -1 },
      { maxUsd: Number.NaN },
      { maxUsd: Number.POSITIVE_INFINITY },
      { maxRuns: -2 },
      { maxRuns: 1.5 },
      {},
    ])
      expect(() => tenantBudget({ store, perDay })).toThrow(/\[policy\] tenantBudget: perDay/);
    expect(() => tenantBudget({ store, perDay: { maxUsd: 1 }, timeZone: "Mars/Olympus" })).toThrow(
      /\[policy\] tenantBudget: timeZone "Mars\/Olympus"/,
    );
    expect(() => tenantBudget({ store: {} as never, perDay: { maxUsd: 1 } })).toThrow(
      InvalidArgumentError,
    );
  });
});
