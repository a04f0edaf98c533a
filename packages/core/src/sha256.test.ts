import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createSha256, portableSha256, sha256 } from "./digest.js";
import { randomHex } from "./random-hex.js";

describe("sha256 without node:crypto", () => {
  it("equals Node's SHA-256 of the UTF-8 bytes for any string, lone surrogates included", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        const expected = createHash("sha256").update(text).digest("hex");
        expect(sha256(text)).toBe(expected);
        expect(portableSha256(text)).toBe(expected);
      }),
    );
  });

  it("hashes in pieces as in one, and a digest mid-way leaves the stream usable", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "grapheme", maxLength: 80 }), { maxLength: 8 }),
        (parts) => {
          const stream = createSha256();
          const node = createHash("sha256");
          for (const part of parts) {
            stream.update(part);
            node.update(part);
            expect(stream.hexDigest()).toBe(node.copy().digest("hex"));
          }
          expect(stream.hexDigest()).toBe(sha256(parts.join("")));
        },
      ),
    );
  });

  it("randomHex gives the asked number of random bytes as hex", () => {
    const ids = new Set(Array.from({ length: 200 }, () => randomHex(8)));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
  });
});
