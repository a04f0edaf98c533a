import { hmac } from "@noble/hashes/hmac";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";

/**
 * HMAC-SHA-256 with `node:crypto`'s call shape (`createHmac("sha256", key).update(text)
 * .digest("hex")`), through `@noble/hashes`, so the envelope's tag needs no `node:` module and
 * comes out the same on Node, Bun, Deno and Workers.
 */
export function createHmac(
  algorithm: "sha256",
  key: string,
): { update(text: string): { digest(encoding: "hex"): string } } {
  if (algorithm !== "sha256")
    throw new TypeError(`[injection] createHmac: only sha256 is supported, got ${algorithm}`);
  const mac = hmac.create(sha256, utf8ToBytes(key));
  return {
    update(text) {
      mac.update(utf8ToBytes(text));
      return { digest: () => bytesToHex(mac.digest()) };
    },
  };
}

/** `count` random bytes from Web Crypto, with `toString("hex")` as `node:crypto`'s Buffer has. */
export function randomBytes(count: number): { toString(encoding: "hex"): string } {
  const bytes = new Uint8Array(count);
  globalThis.crypto.getRandomValues(bytes);
  return { toString: () => bytesToHex(bytes) };
}
