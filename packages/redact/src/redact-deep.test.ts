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
