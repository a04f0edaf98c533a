import * as crypto from "node:crypto";
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

/** A full SHA-256 hex digest of a string. */
export function sha256(text: string): string {
  return oneShot
    ? oneShot("sha256", text, "hex")
    : crypto.createHash("sha256").update(text).digest("hex");
}

// Node 20.12+ hashes in one call, without a Hash object per digest (one per tool call here).
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string })
  .hash;
