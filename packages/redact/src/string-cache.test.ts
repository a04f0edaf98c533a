import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRedactor } from "./create-redactor.js";
import { redact } from "./redact.js";
import { createStringCache } from "./string-cache.js";
import { createVault } from "./vault.js";

describe("createStringCache", () => {
  it("keeps entries in use and drops those left unused", () => {
    const cache = createStringCache(4, 8);
    cache.set("a", "A");
    cache.set("b", "B");
    cache.set("c", "C"); // the young generation was full: a and b become old
    expect(cache.get("a")).toBe("A"); // a is young again
    cache.set("d", "D"); // c and a become old, b (never used) is dropped
    cache.set("e", "E");
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBe("A");
    cache.set("too long a key", "x");
    expect(cache.get("too long a key")).toBeUndefined();
    expect(cache.size).toBeLessThanOrEqual(4);
  });

  it("keeps at most maxEntries entries whatever the sequence of calls", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 3 }), { maxLength: 200 }), (keys) => {
        const cache = createStringCache(5, 3);
        for (const key of keys) {
          if (cache.get(key) === undefined) cache.set(key, key.toUpperCase());
          expect(cache.get(key)).toBe(key.toUpperCase());
          expect(cache.size).toBeLessThanOrEqual(5);
        }
      }),
    );
  });
});

describe("createRedactor with repeated strings", () => {
  const values = fc.oneof(
    fc.constantFrom(
      "jane@acme.io",
      "call +1 415 555 0132",
      "execute_tool lookup_order",
      "card 4111 1111 1111 1111",
      "password=hunter2",
      "",
    ),
    fc.string({ maxLength: 30 }),
  );

  it("gives the same answer from its cache as a fresh redaction", () => {
    const redactor = createRedactor();
    fc.assert(
      fc.property(fc.array(values, { maxLength: 30 }), (list) => {
        for (const value of list) {
          expect(redactor(value)).toBe(redact(value).text);
          expect(redactor([value, { note: value }])).toEqual([
            redact(value).text,
            { note: redact(value).text },
          ]);
        }
      }),
    );
  });

  it("does not cache indexed placeholders: a cleared vault gets its values again", () => {
    const vault = createVault();
    const redactor = createRedactor({ placeholder: "indexed", scope: vault });
    expect(redactor("mail jane@acme.io")).toBe("mail <EMAIL_1>");
    vault.clear();
    expect(redactor("mail jane@acme.io")).toBe("mail <EMAIL_1>");
    expect(vault.reveal("<EMAIL_1>")).toBe("jane@acme.io");
  });
});
