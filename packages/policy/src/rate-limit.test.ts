import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { rateLimit } from "./rate-limit.js";

describe("rateLimit", () => {
  it("is a token bucket per tool glob", () => {
    let now = 0;
    const gate = rateLimit(
      { tool: "send_*", capacity: 2, refillPerSecond: 0.5 },
      { now: () => now },
    );
    expect(gate.name).toBe("rate_limit");
    expect(gate.step).toBe("2.1");
    const run = runOf();
    expect(gate.check(callOf("send_email", {}, run)).type).toBe("allow");
    expect(gate.check(callOf("send_sms", {}, run)).type).toBe("allow");
    const refused = gate.check(callOf("send_email", {}, run));
    expect(refused).toMatchObject({
      type: "deny",
      reason: "rate_limited",
      details: { retryAfterMs: 2000 },
    });
    expect(refused.type === "deny" && refused.message).toMatch(
      /next call is possible in about 2 s/,
    );
    expect(gate.check(callOf("lookup_order", {}, run)).type).toBe("allow");
    now = 1999;
    expect(gate.check(callOf("send_email", {}, run)).type).toBe("deny");
    now = 2000;
    expect(gate.check(callOf("send_email", {}, run)).type).toBe("allow");
    now = 100_000;
    expect(gate.check(callOf("send_email", {}, run)).type).toBe("allow");
    expect(gate.check(callOf("send_email", {}, run)).type).toBe("allow");
    expect(gate.check(callOf("send_email", {}, run)).type).toBe("deny");
  });

  it("keeps one bucket per agent with perAgent, and per tool with perTool", () => {
    const gate = rateLimit(
      [
        { tool: "send_email", perAgent: true, capacity: 1, refillPerSecond: 0.001 },
        { tool: "lookup_*", perTool: true, capacity: 1, refillPerSecond: 0.001 },
      ],
      { now: () => 0 },
    );
    const ann = runOf([], "ann");
    const bob = runOf([], "bob");
    expect(gate.check(callOf("send_email", {}, ann)).type).toBe("allow");
    expect(gate.check(callOf("send_email", {}, ann))).toMatchObject({
      type: "deny",
      message: expect.stringContaining("for agent ann"),
    });
    expect(gate.check(callOf("send_email", {}, bob)).type).toBe("allow");
    expect(gate.check(callOf("lookup_order", {}, ann)).type).toBe("allow");
    expect(gate.check(callOf("lookup_customer", {}, ann)).type).toBe("allow");
    expect(gate.check(callOf("lookup_order", {}, bob)).type).toBe("deny");
  });

  it("gives the token back when a later step refuses the call, and does not charge a recheck twice", async () => {
    const gate = rateLimit(
      { tool: "issue_refund", capacity: 1, refillPerSecond: 0.001 },
      { now: () => 0 },
    );
    const run = runOf();
    const first = callOf("issue_refund", {}, run);
    expect(gate.check(first).type).toBe("allow");
    expect(gate.check({ ...first, recheck: true }).type).toBe("allow"); // re-checked after a durable approval
    expect(gate.check(first).type).toBe("deny"); // the same key again, but not a re-check: charged
    expect(gate.check(callOf("issue_refund", {}, run)).type).toBe("deny");
    gate.observe({ call: first, status: "refused", reason: "approval_denied", durationMs: 0 });
    const second = callOf("issue_refund", {}, run);
    expect(gate.check(second).type).toBe("allow");
    gate.observe({ call: second, status: "ok", durationMs: 1 });
    expect(gate.check(callOf("issue_refund", {}, run)).type).toBe("deny");
  });

  it("validates its limits", () => {
    expect(() => rateLimit({ tool: "x", capacity: 0, refillPerSecond: 1 })).toThrow(
      /\[policy\] rateLimit.capacity must be a positive integer/,
    );
    expect(() => rateLimit({ tool: "x", capacity: 1, refillPerSecond: 0 })).toThrow(
      /refillPerSecond must be a positive number/,
    );
    expect(() => rateLimit([])).toThrow(/at least one limit/);
    expect(rateLimit({ tool: "x", capacity: 1, refillPerSecond: 1 }).digest()).not.toBe(
      rateLimit({ tool: "x", capacity: 2, refillPerSecond: 1 }).digest(),
    );
  });
});
