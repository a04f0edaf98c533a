import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { PolicyFrozenError } from "./errors.js";
import { policy } from "./policy.js";
import { argDomainNotIn, argGt, argIn } from "./predicate.js";
import { allow, ask, deny } from "./rule.js";

describe("policy rules", () => {
  it("is a gate at step 2 named policy", () => {
    const gate = policy([]);
    expect(gate.name).toBe("policy");
    expect(gate.step).toBe("2");
  });

  it("allows, asks and denies on tool globs", () => {
    const gate = policy([allow("lookup_*"), ask("issue_refund"), deny("delete_*")], {
      default: "deny",
    });
    expect(gate.check(callOf("lookup_order"))).toEqual({ type: "allow" });
    expect(gate.check(callOf("issue_refund"))).toMatchObject({ type: "ask", reason: "policy_ask" });
    expect(gate.check(callOf("delete_customer"))).toMatchObject({
      type: "deny",
      reason: "policy_deny",
      details: { rule: "deny delete_* (rules[2])" },
    });
    expect(gate.check(callOf("send_email"))).toMatchObject({
      type: "deny",
      reason: "policy_default_deny",
    });
  });

  it("gives a message and fix hints the model can act on", () => {
    const gate = policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })]);
    const decision = gate.check(callOf("send_email", { to: "eve@evil.io" }));
    expect(decision).toMatchObject({
      type: "deny",
      reason: "policy_deny",
      message: 'The policy does not allow send_email when the domain of "to" is not acme-shop.com.',
    });
    expect(decision.type === "deny" && decision.fixHints?.[0]).toMatch(
      /no longer holds that the domain of "to" is not acme-shop.com/,
    );
    expect(gate.check(callOf("send_email", { to: "ann@acme-shop.com" }))).toEqual({
      type: "allow",
    });
  });

  it("uses a rule's own reason, message and hints", () => {
    const gate = policy([
      deny("issue_refund", {
        when: argGt("amount", 5000),
        id: "huge-refunds",
        reason: "refund_too_large",
        message: "Refunds above 5000 go through finance.",
        fixHints: ["Open a finance ticket."],
      }),
    ]);
    expect(gate.check(callOf("issue_refund", { amount: 6000 }))).toEqual({
      type: "deny",
      reason: "refund_too_large",
      message: "Refunds above 5000 go through finance.",
      fixHints: ["Open a finance ticket."],
      details: { rule: "huge-refunds" },
    });
  });

  it("lets the most restrictive matching rule win, whatever the order", () => {
    const rules = [
      allow("*"),
      ask("issue_*", { when: argGt("amount", 500) }),
      deny("issue_refund", { when: argIn("currency", ["JPY"]) }),
      allow("issue_refund"),
    ];
    const calls = [
      [callOf("issue_refund", { amount: 10, currency: "EUR" }), "allow"],
      [callOf("issue_refund", { amount: 600, currency: "EUR" }), "ask"],
      [callOf("issue_refund", { amount: 600, currency: "JPY" }), "deny"],
      [callOf("issue_refund", { amount: 1, currency: "JPY" }), "deny"],
      [callOf("lookup_order", {}), "allow"],
    ] as const;
    fc.assert(
      fc.property(
        fc.shuffledSubarray(rules, { minLength: rules.length, maxLength: rules.length }),
        fc.constantFrom("allow", "ask", "deny" as const),
        (shuffled, fallback) => {
          const gate = policy(shuffled, { default: fallback });
          for (const [call, expected] of calls) expect(gate.check(call).type).toBe(expected);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("is the most restrictive effect among matching rules, for random rule sets (property)", () => {
    const ruleArb = fc.record({
      effect: fc.constantFrom("allow", "ask", "deny" as const),
      tool: fc.constantFrom("*", "issue_*", "issue_refund", "send_*"),
      bound: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(ruleArb, { maxLength: 8 }),
        fc.constantFrom("issue_refund", "send_email", "lookup"),
        fc.integer({ min: 0, max: 1000 }),
        fc.constantFrom("allow", "ask", "deny" as const),
        (specs, tool, amount, fallback) => {
          const make = { allow, ask, deny };
          const gate = policy(
            specs.map((spec) =>
              make[spec.effect](
                spec.tool,
                spec.bound === undefined ? {} : { when: argGt("amount", spec.bound) },
              ),
            ),
            { default: fallback },
          );
          const glob = (pattern: string) =>
            pattern === "*" ||
            pattern === tool ||
            (pattern.endsWith("*") && tool.startsWith(pattern.slice(0, -1)));
          const matching = specs
            .filter((spec) => glob(spec.tool) && (spec.bound === undefined || amount > spec.bound))
            .map((spec) => spec.effect);
          const expected = matching.includes("deny")
            ? "deny"
            : matching.includes("ask")
              ? "ask"
              : matching.includes("allow")
                ? "allow"
                : fallback;
          expect(gate.check(callOf(tool, { amount })).type).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("fails closed when a condition throws: deny and ask rules apply, allow rules do not", () => {
    const boom = () => {
      throw new Error("lookup service down");
    };
    const denyGate = policy([deny("issue_refund", { when: boom })]);
    expect(denyGate.check(callOf("issue_refund"))).toMatchObject({
      type: "deny",
      reason: "policy_deny",
      details: { predicateError: "lookup service down" },
    });
    const askGate = policy([ask("issue_refund", { when: argGt("amount", 500) })]);
    expect(askGate.check(callOf("issue_refund", { amount: "lots" }))).toMatchObject({
      type: "ask",
      reason: "policy_ask",
    });
    const allowGate = policy([allow("issue_refund", { when: boom })], { default: "deny" });
    expect(allowGate.check(callOf("issue_refund"))).toMatchObject({
      type: "deny",
      reason: "policy_default_deny",
      details: { predicateError: "lookup service down" },
    });
    const notBoolean = policy([deny("x", { when: (() => "yes") as never })]);
    expect(notBoolean.check(callOf("x"))).toMatchObject({ type: "deny" });
  });

  it("applies the default when no rule matches, and shows it in the digest", () => {
    expect(policy([]).check(callOf("anything"))).toEqual({ type: "allow" });
    expect(policy([], { default: "ask" }).check(callOf("anything"))).toMatchObject({
      type: "ask",
      reason: "policy_default_ask",
    });
    expect(policy([], { default: "deny" }).check(callOf("anything"))).toMatchObject({
      type: "deny",
      reason: "policy_default_deny",
    });
    expect(policy([], { default: "deny" }).digest()).not.toBe(
      policy([], { default: "allow" }).digest(),
    );
    expect(policy([], { default: "deny" }).toJSON()).toEqual({
      version: 1,
      default: "deny",
      rules: [],
    });
  });

  it("limits rules to roles of the run", () => {
    const gate = policy(
      [
        allow("issue_refund", { roles: ["support", "finance"] }),
        deny("issue_refund", { roles: ["intern"] }),
      ],
      { default: "deny" },
    );
    expect(gate.check(callOf("issue_refund", {}, runOf(["support"])))).toEqual({ type: "allow" });
    expect(gate.check(callOf("issue_refund", {}, runOf(["support", "intern"])))).toMatchObject({
      type: "deny",
      reason: "policy_deny",
    });
    const denied = gate.check(callOf("issue_refund", {}, runOf(["sales"])));
    expect(denied).toMatchObject({
      type: "deny",
      reason: "role_not_allowed",
      message:
        "issue_refund is allowed only for the roles finance, support, and this run has the roles sales.",
    });
    expect(gate.check(callOf("issue_refund"))).toMatchObject({
      type: "deny",
      reason: "role_not_allowed",
      message: expect.stringContaining("this run has no role"),
    });
  });

  it("limits rules to time windows, with an injected clock", () => {
    let now = Date.parse("2026-12-01T10:00:00Z"); // a Tuesday, 11:00 in Paris
    const gate = policy(
      [
        allow("send_email", {
          window: {
            days: ["mon", "tue", "wed", "thu", "fri"],
            start: "09:00",
            end: "17:00",
            timeZone: "Europe/Paris",
          },
        }),
      ],
      { default: "deny", now: () => now },
    );
    expect(gate.check(callOf("send_email"))).toEqual({ type: "allow" });
    now = Date.parse("2026-12-01T16:30:00Z"); // 17:30 in Paris
    expect(gate.check(callOf("send_email"))).toMatchObject({
      type: "deny",
      reason: "outside_time_window",
      message:
        "send_email is allowed only during mon,tue,wed,thu,fri 09:00-17:00 Europe/Paris, and it is outside that window now.",
    });
    now = Date.parse("2026-12-05T10:00:00Z"); // a Saturday
    expect(gate.check(callOf("send_email"))).toMatchObject({ reason: "outside_time_window" });
  });

  it("digests every setting, stably across rule objects", () => {
    const make = () =>
      policy(
        [
          deny("send_email", { when: argDomainNotIn("to", ["b.com", "a.com"]) }),
          ask("issue_refund", { when: argGt("amount", 500) }),
        ],
        { default: "deny" },
      );
    expect(make().digest()).toBe(make().digest());
    expect(make().digest()).toMatch(/^[0-9a-f]{64}$/);
    const other = policy(
      [
        deny("send_email", { when: argDomainNotIn("to", ["b.com", "a.com"]) }),
        ask("issue_refund", { when: argGt("amount", 501) }),
      ],
      { default: "deny" },
    );
    expect(other.digest()).not.toBe(make().digest());
    const withRole = policy(
      [
        deny("send_email", { when: argDomainNotIn("to", ["b.com", "a.com"]) }),
        ask("issue_refund", { when: argGt("amount", 500), roles: ["x"] }),
      ],
      { default: "deny" },
    );
    expect(withRole.digest()).not.toBe(make().digest());
  });

  it("freeze() refuses every later change; rules are immutable values", () => {
    const rule = deny("delete_*");
    const gate = policy([rule]);
    const before = gate.digest();
    gate.add(allow("lookup_*"));
    expect(gate.digest()).not.toBe(before);
    const frozenDigest = gate.freeze().digest();
    expect(gate.frozen).toBe(true);
    expect(() => gate.add(allow("*"))).toThrow(PolicyFrozenError);
    expect(() => gate.add(allow("*"))).toThrow(
      /\[policy\] policy.add\(rule\): this policy is frozen/,
    );
    expect(() => {
      (rule as { effect: string }).effect = "allow";
    }).toThrow(TypeError);
    expect(() => {
      (gate.rules as unknown as unknown[]).push(allow("*"));
    }).toThrow(TypeError);
    expect(() => {
      (rule.toJSON() as Record<string, unknown>).tool = "*";
    }).toThrow(TypeError);
    expect(gate.digest()).toBe(frozenDigest);
    expect(gate.check(callOf("delete_customer"))).toMatchObject({ type: "deny" });
  });

  it("takes plain rule data and freezes a copy", () => {
    const data = { effect: "deny" as const, tool: "delete_*" };
    const gate = policy([data]);
    data.tool = "nothing";
    expect(gate.check(callOf("delete_customer"))).toMatchObject({ type: "deny" });
    expect(() => policy([{ effect: "block", tool: "x" } as never])).toThrow(
      /\[policy\] rules\[0\]\.effect must be "allow", "ask" or "deny", got "block"/,
    );
  });

  it("validates its inputs", () => {
    expect(() => policy("deny all" as never)).toThrow(/rules must be an array/);
    expect(() => policy([], { default: "block" as never })).toThrow(
      /default must be "allow", "ask" or "deny"/,
    );
    expect(() => allow("x", { roles: [] })).toThrow(/roles must be a non-empty array/);
    expect(() => allow("x", { window: { start: "9:00", end: "17:00" } })).toThrow(
      /must be a 24-hour time "HH:MM"/,
    );
    expect(() =>
      allow("x", { window: { start: "09:00", end: "17:00", timeZone: "Mars/Olympus" } }),
    ).toThrow(/is not a time zone/);
    expect(() => allow("x", { window: { start: "09:00", end: "09:00" } })).toThrow(
      /must not be empty/,
    );
    expect(() => deny("x", { reason: "Bad Reason" })).toThrow(/snake_case/);
    expect(() => deny("x", { when: 5 as never })).toThrow(/when must be a predicate/);
  });
});

describe("tamper resistance", () => {
  it("freezes gates and every nested part of a rule", () => {
    const gate = policy([deny("delete_*")]);
    expect(() => {
      (gate as { check: unknown }).check = () => ({ type: "allow" });
    }).toThrow(TypeError);
    const rule = allow(["a", "b"], {
      roles: ["support"],
      window: { days: ["mon"], start: "09:00", end: "17:00" },
      fixHints: ["x"],
      when: argIn("k", ["v"]),
    });
    const attempts: Array<() => void> = [
      () => (rule.tool as string[]).push("*"),
      () => (rule.roles as string[]).push("intern"),
      () => ((rule.window as { start: string }).start = "00:00"),
      () => (rule.window!.days as string[]).push("sun"),
      () => (rule.fixHints as string[]).push("y"),
      () => ((rule.when as { description: string }).description = "x"),
      () => ((rule.when!.toJSON() as { in: string[] }).in as string[]).push("w"),
    ];
    for (const attempt of attempts) expect(attempt).toThrow(TypeError);
    expect(policy([rule]).digest()).toBe(
      policy([
        allow(["a", "b"], {
          roles: ["support"],
          window: { days: ["mon"], start: "09:00", end: "17:00" },
          fixHints: ["x"],
          when: argIn("k", ["v"]),
        }),
      ]).digest(),
    );
  });
});
