import { createHash } from "node:crypto";
import { canonicalJson } from "./json.js";

/**
 * The digest loopguard records and binds approvals to: the lowercase hex SHA-256 (64
 * characters) of the UTF-8 bytes of the value's RFC 8785 canonical JSON (numbers JSON cannot
 * hold count as `null`). Anyone recomputes it with a JCS implementation and SHA-256: an
 * approver checks `argsDigest` against the arguments it was shown.
 *
 * @example
 * digestOf({ order_id: "A1001", amount: 89.99 }) ===
 *   createHash("sha256").update('{"amount":89.99,"order_id":"A1001"}').digest("hex");
 */
export function digestOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

/** A full SHA-256 hex digest of a string. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
