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

/** The part of `node:crypto` the digests use when the runtime has it. */
interface NativeCrypto {
  createHash(algorithm: "sha256"): NativeHash;
  hash?: (algorithm: "sha256", data: string, encoding: "hex") => string;
}
interface NativeHash {
  update(data: string, encoding: "utf8"): NativeHash;
  digest(encoding: "hex"): string;
  copy(): NativeHash;
}

/**
 * `node:crypto` through `process.getBuiltinModule` (Node 20.16+, Bun, Deno; Workers under
 * `nodejs_compat`), with no `import` of a `node:` module, so the root entry bundles for any
 * runtime; undefined elsewhere, and then the digests go through `@noble/hashes`.
 */
function nativeCrypto(): NativeCrypto | undefined {
  try {
    const host = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } })
      .process;
    const module = host?.getBuiltinModule?.("node:crypto") as Partial<NativeCrypto> | undefined;
    if (typeof module?.createHash !== "function") return undefined;
    return typeof module.createHash("sha256").copy === "function"
      ? (module as NativeCrypto)
      : undefined;
  } catch {
    return undefined;
  }
}
const native = nativeCrypto();

/**
 * A full SHA-256 hex digest of a string's UTF-8 bytes: the runtime's native SHA-256 where it has
 * one (about 9x faster than pure JavaScript on 2 KB), else `@noble/hashes` (pure, audited); the
 * same digest either way (property-tested).
 */
export function sha256(text: string): string {
  if (native)
    return native.hash
      ? native.hash("sha256", text, "hex")
      : native.createHash("sha256").update(text, "utf8").digest("hex");
  return portableSha256(text);
}

/** SHA-256 through `@noble/hashes` alone: what runtimes without `node:crypto` use. */
export function portableSha256(text: string): string {
  return bytesToHex(sha256Hash(utf8ToBytes(text)));
}

/** An incremental SHA-256: `update` with strings (hashed as UTF-8), `hexDigest` at the end. */
export interface Sha256Stream {
  update(text: string): Sha256Stream;
  /** The hex digest of everything given so far; the stream stays usable. */
  hexDigest(): string;
}

/** Starts an incremental SHA-256 (see {@link Sha256Stream}); native where the runtime has it. */
export function createSha256(options: { portable?: boolean } = {}): Sha256Stream {
  if (native && !options.portable) {
    const hash = native.createHash("sha256");
    const stream: Sha256Stream = {
      update(text) {
        hash.update(text, "utf8");
        return stream;
      },
      hexDigest: () => hash.copy().digest("hex"),
    };
    return stream;
  }
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
