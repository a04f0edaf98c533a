import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { callOf, runOf } from "./__fixtures__/calls.js";
import { PolicyFrozenError, PolicyValidationError } from "./errors.js";
import { loadPolicy } from "./load-policy.js";
import { loadPolicyFile } from "./load-policy-file.js";
import { policy } from "./policy.js";
import { argDomainNotIn, argGt, argMatches, not } from "./predicate.js";
import { allow, ask, deny } from "./rule.js";

const acme = {
  version: 1,
  default: "deny",
  rules: [
    { effect: "allow", tool: ["lookup_*", "send_email", "issue_refund"] },
    { effect: "ask", tool: "issue_refund", when: { arg: "refund.amount", gt: 500 } },
    {
      effect: "deny",
      tool: "send_email",
      when: { arg: "to", domainNotIn: ["acme-shop.com"] },
      fixHints: ["Only write to acme-shop.com addresses."],
    },
    {
      effect: "allow",
      tool: "delete_*",
      roles: ["admin"],
      window: {
        days: ["mon", "tue", "wed", "thu", "fri"],
        start: "09:00",
        end: "17:00",
        timeZone: "Europe/Paris",
      },
    },
  ],
  rateLimits: [{ tool: "send_email", perAgent: true, capacity: 2, refillPerSecond: 0.01 }],
  runGuard: { irreversibleTools: ["issue_refund"], loopRepeats: 4 },
} as const;

const invalid = (document: unknown) => {
  try {
    loadPolicy(document as never);
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyValidationError);
    return (error as Error).message;
  }
  throw new Error("expected the document to be refused");
};
const withRule = (rule: unknown) => ({
  version: 1,
  default: "deny",
  rules: [{ effect: "allow", tool: "a" }, { effect: "allow", tool: "b" }, rule],
});

describe("loadPolicy", () => {
  it("returns the policy, rate-limit and RunGuard gates of a document", () => {
    const loaded = loadPolicy(acme, { now: () => Date.parse("2026-12-01T10:00:00Z") });
    expect(loaded.gates.map((gate) => `${gate.step}:${gate.name}`)).toEqual([
      "2:policy",
      "2.1:rate_limit",
      "2.3:run_loop",
    ]);
    expect(loaded.policy.frozen).toBe(true);
    expect(loaded.runGuard?.settings).toMatchObject({
      irreversibleTools: ["issue_refund"],
      loopRepeats: 4,
      maxLoopPeriod: 5,
      detectLoops: true,
    });
    const gate = loaded.policy;
    expect(gate.check(callOf("lookup_order")).type).toBe("allow");
    expect(gate.check(callOf("issue_refund", { refund: { amount: 600 } })).type).toBe("ask");
    expect(gate.check(callOf("issue_refund", { refund: { amount: 60 } })).type).toBe("allow");
    expect(gate.check(callOf("send_email", { to: "eve@evil.io" }))).toMatchObject({
      type: "deny",
      reason: "policy_deny",
      fixHints: ["Only write to acme-shop.com addresses."],
    });
    expect(gate.check(callOf("delete_customer", {}, runOf(["admin"]))).type).toBe("allow");
    expect(gate.check(callOf("delete_customer", {}, runOf(["support"])))).toMatchObject({
      reason: "role_not_allowed",
    });
    expect(gate.check(callOf("wire_money"))).toMatchObject({ reason: "policy_default_deny" });
  });

  it("accepts JSON text", () => {
    expect(loadPolicy(JSON.stringify(acme)).digest).toBe(loadPolicy(acme).digest);
  });

  it("names the JSON path and what was expected in every error", () => {
    expect(
      invalid(
        withRule({ effect: "ask", tool: "issue_refund", when: { arg: "amount", gt: "500" } }),
      ),
    ).toBe(
      '[policy] rules[2].when.gt: expected a number, got "500"; fix the policy document and load it again',
    );
    expect(invalid({ version: 1, rules: [] })).toMatch(
      /^\[policy\] default: missing; this key is required/,
    );
    expect(invalid({ version: 2, default: "deny", rules: [] })).toMatch(
      /^\[policy\] version: expected 1, got 2/,
    );
    expect(invalid({ version: 1, default: "block", rules: [] })).toMatch(
      /^\[policy\] default: expected one of "allow", "ask", "deny", got "block"/,
    );
    expect(invalid(withRule({ effect: "allow", tool: "x", extra: 1 }))).toMatch(
      /^\[policy\] rules\[2\]\.extra: unknown key; remove it/,
    );
    expect(invalid(withRule({ effect: "allow", tool: 5 }))).toMatch(
      /^\[policy\] rules\[2\]\.tool: expected a string or an array, got 5/,
    );
    expect(invalid(withRule({ effect: "allow", tool: "x{" }))).toMatch(
      /^\[policy\] rules\[2\]\.tool: tool glob "x\{" is invalid/,
    );
    expect(
      invalid(withRule({ effect: "allow", tool: "x", when: { arg: "a", gt: 1, lt: 2 } })),
    ).toMatch(
      /^\[policy\] rules\[2\]\.when: expected only one operator per condition \(found gt, lt\)/,
    );
    expect(
      invalid(withRule({ effect: "allow", tool: "x", when: { all: [{ arg: "a", in: "abc" }] } })),
    ).toMatch(/^\[policy\] rules\[2\]\.when\.all\[0\]\.in: expected an array, got "abc"/);
    expect(
      invalid(withRule({ effect: "allow", tool: "x", when: { arg: "a", matches: "(" } })),
    ).toMatch(
      /^\[policy\] rules\[2\]\.when\.matches: expected a valid regular expression, got "\("/,
    );
    expect(
      invalid(withRule({ effect: "allow", tool: "x", window: { start: "9:00", end: "17:00" } })),
    ).toMatch(/^\[policy\] rules\[2\]\.window\.start: expected a 24-hour time "HH:MM", got "9:00"/);
    expect(
      invalid(
        withRule({
          effect: "allow",
          tool: "x",
          window: { start: "09:00", end: "17:00", timeZone: "Mars/Olympus" },
        }),
      ),
    ).toMatch(/^\[policy\] rules\[2\]\.window\.timeZone: "Mars\/Olympus" is not a time zone/);
    expect(
      invalid({ version: 1, default: "deny", rules: [], runGuard: { loopRepeats: 1 } }),
    ).toMatch(/^\[policy\] runGuard\.loopRepeats: expected a number >= 2, got 1/);
    expect(
      invalid({ version: 1, default: "deny", rules: [], runGuard: { maxLoopPeriod: 11 } }),
    ).toMatch(/^\[policy\] runGuard\.maxLoopPeriod: expected a number <= 10, got 11/);
    expect(
      invalid({
        version: 1,
        default: "deny",
        rules: [],
        rateLimits: [{ tool: "x", capacity: 1.5, refillPerSecond: 1 }],
      }),
    ).toMatch(/^\[policy\] rateLimits\[0\]\.capacity: expected an integer, got 1\.5/);
    expect(invalid("{ nope")).toMatch(
      /^\[policy\] \(root\): expected a JSON policy document, got text that is not JSON/,
    );
    expect(invalid(42)).toMatch(/^\[policy\] \(root\): expected a policy document object/);
    const many = new PolicyValidationError(["a: x", "b: y"]);
    expect(many.issues).toEqual(["a: x", "b: y"]);
  });

  it("digests every setting of the document, RunGuard included, whatever the key order", () => {
    const digest = loadPolicy(acme).digest;
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(loadPolicy(acme).policy.digest()).toBe(digest);
    const reordered = JSON.parse(
      JSON.stringify({
        runGuard: acme.runGuard,
        rateLimits: acme.rateLimits,
        rules: acme.rules,
        default: acme.default,
        version: 1,
      }),
    );
    expect(loadPolicy(reordered).digest).toBe(digest);
    expect(loadPolicy({ ...acme, runGuard: { ...acme.runGuard, loopRepeats: 5 } }).digest).not.toBe(
      digest,
    );
    expect(
      loadPolicy({
        ...acme,
        runGuard: { irreversibleTools: ["issue_refund"], loopRepeats: 4, maxLoopPeriod: 5 },
      }).digest,
    ).toBe(digest);
    expect(
      loadPolicy({ ...acme, rateLimits: [{ ...acme.rateLimits[0], capacity: 3 }] }).digest,
    ).not.toBe(digest);
    expect(loadPolicy({ ...acme, default: "ask" }).digest).not.toBe(digest);
    expect(loadPolicy({ version: 1, default: "deny", rules: [] }).digest).not.toBe(
      loadPolicy({ version: 1, default: "deny", rules: [], runGuard: {} }).digest,
    );
  });

  it("gives the same digest as the same rules written in code, and reads their JSON back", () => {
    const coded = policy(
      [
        deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }),
        ask("issue_refund", { when: argGt("amount", 500) }),
        allow("lookup_*", { when: not(argMatches("q", /drop/i)) }),
      ],
      { default: "deny" },
    );
    const loaded = loadPolicy(coded.toJSON());
    expect(loaded.digest).toBe(coded.digest());
    expect(loaded.policy.toJSON()).toEqual(coded.toJSON());
  });

  it("is frozen: the document and the policy cannot change", () => {
    const loaded = loadPolicy(acme);
    expect(() => loaded.policy.add(allow("*"))).toThrow(PolicyFrozenError);
    expect(() => {
      (loaded.document.rules as unknown as unknown[]).push({ effect: "allow", tool: "*" });
    }).toThrow(TypeError);
    expect(() => {
      (loaded.document.rules[0] as { effect: string }).effect = "deny";
    }).toThrow(TypeError);
    expect(loaded.policy.digest()).toBe(loaded.digest);
  });

  it("does not hold on to the caller's object", () => {
    const document = JSON.parse(JSON.stringify(acme));
    const loaded = loadPolicy(document);
    document.rules.push({ effect: "allow", tool: "*" });
    expect(loaded.policy.check(callOf("wire_money")).type).toBe("deny");
    expect(loaded.document.rules).toHaveLength(4);
  });

  it("reads a policy file, and names the file in errors", async () => {
    const dir = await mkdtemp(join(tmpdir(), "loopguard-policy-"));
    try {
      const path = join(dir, "policy.json");
      await writeFile(path, JSON.stringify(acme));
      expect((await loadPolicyFile(path)).digest).toBe(loadPolicy(acme).digest);
      await writeFile(
        path,
        JSON.stringify(withRule({ effect: "ask", tool: "x", when: { arg: "amount", gt: "500" } })),
      );
      await expect(loadPolicyFile(path)).rejects.toThrow(
        `[policy] ${path}: rules[2].when.gt: expected a number, got "500"`,
      );
      await expect(loadPolicyFile(join(dir, "missing.json"))).rejects.toThrow(
        /cannot read the policy file/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("runs in a real loop: the loaded gates halt a refused irreversible refund", async () => {
    const refund = tool({
      name: "issue_refund",
      description: "Refund.",
      input: v.object({ refund: v.object({ amount: v.number() }) }),
      run: async () => "refunded",
    });
    const model = scriptedModel([
      {
        content: [
          {
            type: "tool_use",
            id: "toolu_1",
            name: "issue_refund",
            input: { refund: { amount: 900 } },
          },
        ],
      },
      { content: "unused" },
    ]);
    const result = await createAgent({ model, tools: [refund], gates: loadPolicy(acme).gates }).run(
      "Refund 900",
    );
    // No approver: the ask becomes a refusal at step 3, and the refund is irreversible.
    expect(result.status).toBe("halted");
    expect(result.blocked[0]).toMatchObject({
      reason: "approval_no_approver",
      decision: { refusedAt: "3:approval", halted: true },
    });
  });
});
