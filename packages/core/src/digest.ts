import { createHash } from "node:crypto";
import { canonicalJson } from "./json.js";

/** A short, stable SHA-256 digest (hex, 16 chars) of a value's canonical JSON. */
export function digestOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex").slice(0, 16);
}

/** A full SHA-256 hex digest of a string. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
