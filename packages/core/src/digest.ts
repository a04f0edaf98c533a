import { sha256 as sha256Hash } from "@noble/hashes/sha2";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";
import { canonicalJson } from "./json.js";

/**
 * The digest loopguard records and binds approvals to: the lowercase hex SHA-256 (64
 * characters) of the UTF-8 bytes of the value's RFC 8785 canonical JSON (numbers JSON cannot
 * hold count as `null`). Anyone recomputes it with a JCS implementation and SHA-256: an
 * approver checks `argsDigest` against the arguments it was shown.
 *
 * @example
 * digestOf({ order_id: "A1001", amount: 89.99 }) ===
 *   crypto.createHash("sha256").update('{"amount":89.99,"order_id":"A1001"}').digest("hex");
 */
export function digestOf(value: unknown): string {
  return sha256(canonicalJson(value));
}

/**
 * A full SHA-256 hex digest of a string's UTF-8 bytes, through `@noble/hashes` (pure, audited,
 * synchronous), so the same digest comes out on Node, Bun, Deno and Workers with no `node:crypto`.
 */
export function sha256(text: string): string {
  return bytesToHex(sha256Hash(utf8ToBytes(text)));
}

/** An incremental SHA-256: `update` with strings (hashed as UTF-8), `hexDigest` at the end. */
export interface Sha256Stream {
  update(text: string): Sha256Stream;
  /** The hex digest of everything given so far; the stream stays usable. */
  hexDigest(): string;
}

/** Starts an incremental SHA-256 (see {@link Sha256Stream}). */
export function createSha256(): Sha256Stream {
  const hash = sha256Hash.create();
  const stream: Sha256Stream = {
    update(text) {
      hash.update(utf8ToBytes(text));
      return stream;
    },
    hexDigest: () => bytesToHex(hash.clone().digest()),
  };
  return stream;
}
