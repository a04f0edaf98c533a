import { describe, expect, it } from "vitest";
import { callOf } from "./__fixtures__/calls.js";
import {
  all,
  any,
  argDomainNotIn,
  argGt,
  argIn,
  argLt,
  argMatches,
  argNotIn,
  not,
} from "./predicate.js";

const test = (predicate: ReturnType<typeof argGt>, args: Record<string, unknown>) =>
  predicate.test(args, callOf("tool", args));

describe("argument predicates", () => {
  it("argGt and argLt compare numbers, at nested paths too", () => {
    expect(test(argGt("amount", 500), { amount: 500.01 })).toBe(true);
    expect(test(argGt("amount", 500), { amount: 500 })).toBe(false);
    expect(test(argGt("refund.amount", 500), { refund: { amount: 600 } })).toBe(true);
    expect(test(argGt("items[1].qty", 2), { items: [{ qty: 1 }, { qty: 3 }] })).toBe(true);
    expect(test(argGt("items.1.qty", 2), { items: [{ qty: 1 }, { qty: 3 }] })).toBe(true);
    expect(test(argLt("amount", 100), { amount: 99 })).toBe(true);
    expect(test(argLt("amount", 100), { amount: 100 })).toBe(false);
  });

  it("argGt cannot decide on a missing or non-number value (the rule fails closed)", () => {
    expect(() => test(argGt("amount", 500), {})).toThrow(
      /expected a finite number at "amount", got nothing/,
    );
    expect(() => test(argGt("amount", 500), { amount: "600" })).toThrow(/got "600"/);
    expect(() => test(argGt("refund.amount", 500), { refund: null })).toThrow(
      /expected a finite number/,
    );
    expect(() => test(argGt("amount", 500), { amount: Number.NaN })).toThrow(
      /expected a finite number/,
    );
  });

  it("paths read own properties only", () => {
    expect(test(argIn("constructor", ["x"]), {})).toBe(false);
    expect(() => test(argGt("__proto__.x", 1), {})).toThrow(/expected a finite number/);
    expect(() => argGt("a..b", 1)).toThrow(/\[policy\] argument path "a..b" is invalid/);
  });

  it("argIn and argNotIn compare normalised values and copy their set", () => {
    const values = new Set<string>(["EUR", "USD"]);
    const inSet = argIn("currency", values);
    const notIn = argNotIn("currency", values);
    values.add("JPY");
    expect(test(inSet, { currency: "EUR" })).toBe(true);
    expect(test(inSet, { currency: "JPY" })).toBe(false);
    expect(test(notIn, { currency: "JPY" })).toBe(true);
    expect(test(notIn, {})).toBe(true);
    expect(test(inSet, {})).toBe(false);
    // A number equals its decimal text; a boolean is not a string.
    expect(test(argIn("n", [1]), { n: "1" })).toBe(true);
    expect(test(argIn("n", [1]), { n: 1.5 })).toBe(false);
    expect(test(argIn("n", ["true"]), { n: true })).toBe(false);
  });

  it("argMatches tests strings, drops stateful flags, and cannot decide on other values", () => {
    const sql = argMatches("query", /\bdrop\b/gi);
    expect(test(sql, { query: "DROP table x" })).toBe(true);
    expect(test(sql, { query: "DROP table x" })).toBe(true);
    expect(test(sql, { query: "select 1" })).toBe(false);
    expect(test(argMatches("code", /^\d+$/), { code: 123 })).toBe(true);
    expect(() => test(sql, { query: { nested: "drop" } })).toThrow(/expected a string/);
  });

  describe("argDomainNotIn", () => {
    const outside = argDomainNotIn("to", ["acme-shop.com"]);
    const cases: Array<[unknown, boolean]> = [
      ["ann@acme-shop.com", false],
      ["ANN@ACME-SHOP.COM", false],
      ["Ann Lee <ann@acme-shop.com>", false],
      ["mailto:ann@acme-shop.com", false],
      ["ann@acme-shop.com.", false],
      ["https://acme-shop.com/orders/1", false],
      ["ann@gmail.com", true],
      ["ann@mail.acme-shop.com", true],
      ["ann@acme-shop.com.evil.io", true],
      ["https://acme-shop.com@evil.io/", true],
      ["Ann <ann@evil.io>", true],
      ["ann@acme-shop.com <evil@evil.io>", true],
      ["ann@acme-shop.com, bob@acme-shop.com", false],
      ["ann@acme-shop.com; eve@evil.io", true],
      ["eve@evil.io, ann@acme-shop.com", true],
      [["ann@acme-shop.com", "bob@acme-shop.com"], false],
      [["ann@acme-shop.com", "eve@evil.io"], true],
      [[], true],
      ["acme-shop.com", true],
      ["not an address", true],
      ["javascript:alert(1)", true],
      [undefined, true],
      [42, true],
    ];
    it.each(cases)("%j outside acme-shop.com: %s", (to, expected) => {
      expect(test(outside, { to })).toBe(expected);
    });

    it("counts subdomains as inside only when asked", () => {
      const withSubdomains = argDomainNotIn("to", ["acme-shop.com"], { subdomains: true });
      expect(test(withSubdomains, { to: "ann@mail.acme-shop.com" })).toBe(false);
      expect(test(withSubdomains, { to: "ann@notacme-shop.com" })).toBe(true);
      expect(test(withSubdomains, { to: "https://eu.api.acme-shop.com/x" })).toBe(false);
    });

    it("compares internationalised domains in their ASCII form", () => {
      const idn = argDomainNotIn("to", ["bücher.de"]);
      expect(test(idn, { to: "anna@xn--bcher-kva.de" })).toBe(false);
      expect(test(idn, { to: "https://bücher.de/" })).toBe(false);
    });

    it("rejects bad domain lists", () => {
      expect(() => argDomainNotIn("to", [])).toThrow(/must not be empty/);
      expect(() => argDomainNotIn("to", ["a b"])).toThrow(/is not a domain/);
    });
  });

  it("all, any and not combine conditions", () => {
    const big = argGt("amount", 500);
    const jpy = argIn("currency", ["JPY"]);
    expect(test(all(big, jpy), { amount: 600, currency: "JPY" })).toBe(true);
    expect(test(all(big, jpy), { amount: 600, currency: "EUR" })).toBe(false);
    expect(test(any(big, jpy), { amount: 1, currency: "JPY" })).toBe(true);
    expect(test(not(jpy), { currency: "EUR" })).toBe(true);
    expect(
      test(
        any((args) => args.vip === true),
        { vip: true },
      ),
    ).toBe(true);
    expect(all(big, jpy).toJSON()).toEqual({
      all: [
        { arg: "amount", gt: 500 },
        { arg: "currency", in: ["JPY"] },
      ],
    });
  });

  it("validates its inputs", () => {
    expect(() => argGt("amount", "500" as never)).toThrow(
      /\[policy\] argGt\("amount", \.\.\.\): the bound must be a finite number, got "500"/,
    );
    expect(() => argIn("x", "abc" as never)).toThrow(/must be an array or a Set/);
    expect(() => argMatches("x", "drop" as never)).toThrow(/must be a RegExp/);
    expect(() => all()).toThrow(/at least one condition/);
  });
});
