import { describe, expect, it } from "vitest";
import { createRedactor } from "./create-redactor.js";
import { redactDeep } from "./redact-deep.js";
import { isSensitiveKey } from "./sensitive-key.js";

describe("redactDeep", () => {
  it("redacts strings deeply and values under sensitive keys whatever they hold", () => {
    const input = {
      user: "jane@acme.io",
      password: 1234,
      headers: { Authorization: "Basic YWxhZGRpbjpvcGVu", "x-api-key": "k", "set-cookie": ["a=b"] },
      usage: { input_tokens: 5, max_tokens: 10 },
      nested: [{ note: "call +1 415 555 0132" }],
      hasPassword: true,
      token: null,
    };
    expect(redactDeep(input)).toEqual({
      user: "[EMAIL]",
      password: "[SECRET]",
      headers: { Authorization: "[SECRET]", "x-api-key": "[SECRET]", "set-cookie": "[SECRET]" },
      usage: { input_tokens: 5, max_tokens: 10 },
      nested: [{ note: "call [PHONE]" }],
      hasPassword: true,
      token: null,
    });
  });

  it("does not mutate its input", () => {
    const input = { email: "jane@acme.io", list: ["10.0.0.1"], secret: { a: 1 } };
    const snapshot = structuredClone(input);
    redactDeep(input);
    expect(input).toEqual(snapshot);
  });

  it("survives cycles and keeps them in the copy", () => {
    const input: Record<string, unknown> = { email: "a@b.io" };
    input.self = input;
    input.list = [input];
    const output = redactDeep(input) as Record<string, unknown>;
    expect(output.email).toBe("[EMAIL]");
    expect(output.self).toBe(output);
    expect((output.list as unknown[])[0]).toBe(output);
    expect(input.email).toBe("a@b.io");
  });

  it("handles Maps, Sets, Errors, Dates, class instances with toJSON and keys", () => {
    const error = new Error("failed for jane@acme.io");
    const output = redactDeep({
      map: new Map<string, unknown>([
        ["apiKey", "x"],
        ["who", "a@b.io"],
      ]),
      set: new Set(["10.0.0.1"]),
      error,
      when: new Date(0),
      url: new URL("https://bob:pa55word@example.com/"),
      "jane@acme.io": "as a key",
    }) as Record<string, unknown>;
    expect(output.map).toEqual(
      new Map([
        ["apiKey", "[SECRET]"],
        ["who", "[EMAIL]"],
      ]),
    );
    expect(output.set).toEqual(new Set(["[IP_ADDRESS]"]));
    expect(output.error).toBeInstanceOf(Error);
    expect((output.error as Error).message).toBe("failed for [EMAIL]");
    expect((output.error as Error).stack).not.toContain("jane@acme.io");
    expect(error.message).toBe("failed for jane@acme.io");
    expect(output.when).toEqual(new Date(0));
    expect(output.url).toBe("https://bob:[SECRET]@example.com/");
    expect(output["[EMAIL]"]).toBe("as a key");
  });

  it("takes extra sensitive keys and truncates past maxDepth", () => {
    expect(
      redactDeep({ pin_code: "1", badge: "x" }, { sensitiveKeys: ["badge", /^pin_/] }),
    ).toEqual({
      pin_code: "[SECRET]",
      badge: "[SECRET]",
    });
    expect(redactDeep({ a: { b: { c: "deep" } } }, { maxDepth: 2 })).toEqual({
      a: { b: "[TRUNCATED]" },
    });
    expect(() => redactDeep({}, { maxDepth: 0 })).toThrow(/maxDepth/);
  });

  it("classifies key names by words, not substrings", () => {
    for (const key of [
      "password",
      "db_pass",
      "userPassword",
      "x-api-key",
      "accessToken",
      "AccountKey",
      "client_secret",
      "Cookie",
      "auth",
      "PRIVATE_KEY",
    ]) {
      expect(isSensitiveKey(key), key).toBe(true);
    }
    for (const key of [
      "max_tokens",
      "input_tokens",
      "token_count",
      "author",
      "keyboard",
      "public_key",
      "compass",
      "secretary",
      "id",
    ]) {
      expect(isSensitiveKey(key), key).toBe(false);
    }
  });
});

describe("createRedactor", () => {
  it("returns a plain function over any value, compiled once", () => {
    const redactor = createRedactor({ placeholder: "indexed" });
    expect(redactor("mail a@b.io")).toBe("mail <EMAIL_1>");
    expect(redactor({ to: "a@b.io", cc: "c@d.io" })).toEqual({ to: "<EMAIL_1>", cc: "<EMAIL_2>" });
    expect(redactor(42)).toBe(42);
    expect(() => createRedactor({ types: ["NOPE" as "EMAIL"] })).toThrow(
      /\[redact\] createRedactor/,
    );
  });
});

describe("redactDeep on containers", () => {
  it("decodes Buffers and Uint8Arrays as UTF-8, redacts them and gives the same type back", () => {
    const output = redactDeep({
      buffer: Buffer.from("mail jane@acme.io"),
      bytes: new TextEncoder().encode("card 4111 1111 1111 1111"),
      clean: Buffer.from("nothing here"),
    }) as Record<string, Uint8Array>;
    expect(Buffer.isBuffer(output.buffer)).toBe(true);
    expect(output.buffer!.toString()).toBe("mail [EMAIL]");
    expect(output.bytes).toBeInstanceOf(Uint8Array);
    expect(new TextDecoder().decode(output.bytes)).toBe("card [CREDIT_CARD]");
    expect(output.clean!.toString()).toBe("nothing here");
  });

  it("replaces bytes that are not UTF-8 but hold personal data", () => {
    const binary = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00]), Buffer.from(" jane@acme.io ")]);
    expect(redactDeep({ blob: binary })).toEqual({
      blob: `[BINARY ${binary.length} bytes with personal data]`,
    });
    const harmless = Buffer.from([0xff, 0xfe, 0x01]);
    expect((redactDeep({ blob: harmless }) as { blob: Buffer }).blob.equals(harmless)).toBe(true);
  });

  it("replaces card numbers stored as numbers or BigInts, and numbers under personal keys", () => {
    expect(
      redactDeep({
        card: 4111111111111111,
        big: 4111111111111111n,
        amount: 133.89,
        count: 12,
        customer_phone: 4155550132,
        ssn: 123456789,
        orderId: 48213,
      }),
    ).toEqual({
      card: "[CREDIT_CARD]",
      big: "[CREDIT_CARD]",
      amount: 133.89,
      count: 12,
      customer_phone: "[PHONE]",
      ssn: "[SECRET]",
      orderId: 48213,
    });
  });

  it("walks Maps, Sets, class instances and errors with their causes", () => {
    class Customer {
      email = "jane@acme.io";
      phone = 4155550132;
    }
    const cause = new Error("lookup of bob@example.com failed");
    const error = new Error("refund for jane@acme.io failed", { cause });
    const aggregate = new AggregateError([new Error("card 4111 1111 1111 1111")], "many");
    const output = redactDeep({
      map: new Map([["who", new Customer()]]),
      set: new Set([new Customer()]),
      error,
      aggregate,
    }) as Record<string, unknown>;
    expect((output.map as Map<string, unknown>).get("who")).toEqual({
      email: "[EMAIL]",
      phone: "[PHONE]",
    });
    expect([...(output.set as Set<unknown>)]).toEqual([{ email: "[EMAIL]", phone: "[PHONE]" }]);
    const copy = output.error as Error;
    expect(copy).toBeInstanceOf(Error);
    expect(copy.message).toBe("refund for [EMAIL] failed");
    expect(copy.stack).not.toContain("jane@acme.io");
    expect((copy.cause as Error).message).toBe("lookup of [EMAIL] failed");
    const errors = (output.aggregate as AggregateError).errors as Error[];
    expect(errors[0]!.message).toBe("card [CREDIT_CARD]");
    expect(JSON.stringify(output)).not.toMatch(/jane|bob@|4111/);
  });

  it("stays safe on cycles through Maps and on depth", () => {
    const map = new Map<string, unknown>();
    const holder = { map, email: "a@b.io" };
    map.set("back", holder);
    const output = redactDeep(holder) as { map: Map<string, unknown>; email: string };
    expect(output.map.get("back")).toBe(output);
    let deep: Record<string, unknown> = { leaf: "jane@acme.io" };
    for (let level = 0; level < 100; level++) deep = { next: deep };
    expect(JSON.stringify(redactDeep(deep, { maxDepth: 10 }))).toContain("[TRUNCATED]");
    expect(JSON.stringify(redactDeep(deep, { maxDepth: 200 }))).not.toContain("jane");
  });
});
