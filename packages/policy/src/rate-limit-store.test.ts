import type { LimitStore, ToolCall } from "@loopguard/core";
import { memoryLimitStore } from "@loopguard/core/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { loadPolicy } from "./load-policy.js";
import { type RateLimit, rateLimit } from "./rate-limit.js";

const limits: RateLimit[] = [
  { tool: "send_*", perAgent: true, capacity: 2, refillPerSecond: 0.5 },
  { tool: ["send_email", "lookup_*"], perTool: true, capacity: 3, refillPerSecond: 1 },
];

describe("rateLimit(limits, { store })", () => {
  it("with a memory store, decides exactly as the in-memory gate (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            tool: fc.constantFrom("send_email", "send_sms", "lookup_order", "issue_refund"),
            agent: fc.constantFrom("ann", "bob"),
            waitMs: fc.integer({ min: 0, max: 3000 }),
            refusedLater: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        async (steps) => {
          let now = 1_000_000;
          const local = rateLimit(limits, { now: () => now });
          const stored = rateLimit(limits, { now: () => now, store: memoryLimitStore() });
          const runs = { ann: runOf([], "ann"), bob: runOf([], "bob") };
          for (const step of steps) {
            now += step.waitMs;
            const call = callOf(step.tool, {}, runs[step.agent]);
            const expected = local.check(call);
            const actual = await stored.check(call);
            if (actual.type !== expected.type) return false;
            if (expected.type === "deny" && actual.type === "deny") {
              if (actual.reason !== expected.reason) return false;
              if (actual.details?.retryAfterMs !== expected.details?.retryAfterMs) return false;
            }
            const outcome = {
              call,
              status:
                expected.type === "allow" && !step.refusedLater
                  ? ("ok" as const)
                  : ("refused" as const),
              ...(expected.type === "deny"
                ? { reason: expected.reason }
                : step.refusedLater
                  ? { reason: "tainted_argument" }
                  : {}),
              durationMs: 0,
            };
            local.observe(outcome);
            await stored.observe(outcome);
          }
          return true;
        },
      ),
      { numRuns: 150 },
    );
  });

  it("gates in different processes that share a store share the buckets", async () => {
    const store = memoryLimitStore();
    const limit = { tool: "send_email", capacity: 3, refillPerSecond: 0.001 };
    const workers = [1, 2, 3, 4].map(() => rateLimit(limit, { now: () => 0, store }));
    const run = runOf();
    const decisions = await Promise.all(
      Array.from({ length: 12 }, (_unused, index) =>
        workers[index % 4]!.check(callOf("send_email", {}, run)),
      ),
    );
    expect(decisions.filter((decision) => decision.type === "allow")).toHaveLength(3);
  });

  it("loadPolicy(document, { limitStore }) puts the document's rate limits in the store", async () => {
    const store = memoryLimitStore();
    const document = {
      version: 1,
      default: "allow",
      rules: [],
      rateLimits: [{ tool: "send_email", capacity: 2, refillPerSecond: 0.001 }],
    };
    // Two workers load the same document: together they admit the bucket's capacity.
    const workers = [1, 2].map(() => loadPolicy(document, { now: () => 0, limitStore: store }));
    const run = runOf();
    const admitted = [];
    for (let index = 0; index < 4; index += 1)
      admitted.push(
        (await workers[index % 2]!.rateLimit!.check(callOf("send_email", {}, run))).type,
      );
    expect(admitted).toEqual(["allow", "allow", "deny", "deny"]);
    // Without a store each keeps its own buckets, as before.
    const alone = loadPolicy(document, { now: () => 0 });
    expect((await alone.rateLimit!.check(callOf("send_email", {}, run))).type).toBe("allow");
  });

  it("charges a call all or nothing across the limits that cover it", async () => {
    const store = memoryLimitStore();
    const gate = rateLimit(
      [
        { tool: "send_*", capacity: 5, refillPerSecond: 0.001 },
        { tool: "send_email", capacity: 1, refillPerSecond: 0.001 },
      ],
      { now: () => 0, store },
    );
    const run = runOf();
    expect((await gate.check(callOf("send_email", {}, run))).type).toBe("allow");
    // The second limit refuses: the first must get its token back.
    expect(await gate.check(callOf("send_email", {}, run))).toMatchObject({
      reason: "rate_limited",
    });
    for (let index = 0; index < 4; index += 1)
      expect((await gate.check(callOf("send_sms", {}, run))).type).toBe("allow");
    expect((await gate.check(callOf("send_sms", {}, run))).type).toBe("deny");
  });

  it("a store that fails refuses the call as rate_limit_unavailable (fail closed)", async () => {
    const refunds: string[] = [];
    const inner = memoryLimitStore();
    let takes = 0;
    const flaky: LimitStore = {
      name: "flaky",
      take: async (key, spec, options) => {
        takes += 1;
        if (takes === 2) throw new Error("connection reset");
        return inner.take(key, spec, options);
      },
      refund: async (key, spec, options) => {
        refunds.push(key);
        return inner.refund(key, spec, options);
      },
      reserve: inner.reserve,
      settle: inner.settle,
    };
    const gate = rateLimit(limits, { now: () => 0, store: flaky });
    const call: ToolCall = callOf("send_email", {}, runOf([], "ann"));
    expect(await gate.check(call)).toMatchObject({
      type: "deny",
      reason: "rate_limit_unavailable",
      message: expect.stringContaining("flaky: connection reset"),
    });
    // The token the first limit gave was handed back.
    expect(refunds).toHaveLength(1);
    expect(() => rateLimit(limits, { store: {} as LimitStore })).toThrow(
      /\[policy\] rateLimit\(limits, \{ store \}\): store must be a LimitStore/,
    );
  });
});
