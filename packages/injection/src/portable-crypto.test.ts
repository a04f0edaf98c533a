import * as nodeCrypto from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHmac, randomBytes } from "./portable-crypto.js";

describe("portable crypto", () => {
  it("createHmac gives node:crypto's HMAC-SHA-256 for any key and text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (key, text) => {
        expect(createHmac("sha256", key).update(text).digest("hex")).toBe(
          nodeCrypto.createHmac("sha256", key).update(text).digest("hex"),
        );
      }),
    );
  });

  it("randomBytes gives count random bytes as hex", () => {
    const seen = new Set(Array.from({ length: 100 }, () => randomBytes(32).toString("hex")));
    expect(seen.size).toBe(100);
    for (const value of seen) expect(value).toMatch(/^[0-9a-f]{64}$/);
  });
});
