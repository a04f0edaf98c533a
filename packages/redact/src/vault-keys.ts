import { openAesGcm, randomBytes, sealAesGcm } from "./aes-gcm.js";
import { base64ToBytes, bytesToBase64 } from "./base64.js";
import { RedactOptionsError, VaultKeyError } from "./redact-error.js";

/** A data key wrapped (encrypted) under a master key, and the id of that master key. */
export interface WrappedKey {
  keyId: string;
  /** Base64 of the wrapped key (for local keys: IV, ciphertext and GCM tag). */
  wrapped: string;
}

/**
 * Where the vault's master keys live: it wraps each subject's data key for storage and unwraps
 * it to read. `envKeyProvider`, `fileKeyProvider` and `kmsKeyProvider` (your KMS's encrypt
 * and decrypt calls) implement it. Rotation: the provider wraps with its current key and
 * unwraps with any key it still holds; `keyring.rotate()` rewraps every data key under the
 * current one, after which old master keys can be dropped.
 *
 * How it fails: an unknown key id or a key that does not decrypt is a `VaultKeyError`; the
 * vault then reveals nothing and writes nothing (fail closed).
 */
export interface KeyProvider {
  /** For diagnostics and error messages (`env:LOOPGUARD_VAULT_KEY`, `file:/etc/…`, `kms`). */
  readonly name: string;
  /** Wraps a 32-byte data key under the current master key. */
  wrapKey(dataKey: Uint8Array): WrappedKey | Promise<WrappedKey>;
  /** Unwraps a data key; throws `VaultKeyError` when the key id is unknown or the key wrong. */
  unwrapKey(wrapped: WrappedKey): Uint8Array | Promise<Uint8Array>;
}

const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** A master key and its id. */
export interface MasterKey {
  id: string;
  key: Uint8Array;
}

/** Parses `id:base64` keys (comma- or line-separated; the first is current). */
export function parseKeys(text: string, source: string): MasterKey[] {
  const keys: MasterKey[] = [];
  for (const [index, raw] of text.split(/[,\n]/).entries()) {
    const entry = raw.trim();
    if (entry === "" || entry.startsWith("#")) continue;
    const colon = entry.indexOf(":");
    const id = colon === -1 ? "default" : entry.slice(0, colon);
    const encoded = colon === -1 ? entry : entry.slice(colon + 1);
    const key = base64ToBytes(encoded);
    if (!KEY_ID.test(id) || key.length !== 32) {
      throw new VaultKeyError(
        `[redact] ${source}: key ${index + 1} is not "id:<32 bytes in base64>"; make one with generateVaultKey("k1") or: node -e "console.log('k1:'+require('crypto').randomBytes(32).toString('base64'))"`,
      );
    }
    if (keys.some((known) => known.id === id))
      throw new VaultKeyError(`[redact] ${source}: the key id "${id}" appears twice.`);
    keys.push({ id, key });
  }
  if (keys.length === 0)
    throw new VaultKeyError(
      `[redact] ${source} holds no key; put "k1:<32 bytes in base64>" there (generateVaultKey("k1") makes one).`,
    );
  return keys;
}

/** A key provider over master keys held in the process (env, file). */
export function localProvider(name: string, keys: MasterKey[]): KeyProvider {
  const current = keys[0]!;
  return {
    name,
    wrapKey(dataKey) {
      const aad = new TextEncoder().encode(`loopguard-vault-key:${current.id}`);
      return { keyId: current.id, wrapped: bytesToBase64(sealAesGcm(current.key, dataKey, aad)) };
    },
    unwrapKey(wrapped) {
      const master = keys.find((key) => key.id === wrapped.keyId);
      if (master === undefined)
        throw new VaultKeyError(
          `[redact] ${name} holds no key "${wrapped.keyId}" (it holds ${keys.map((key) => `"${key.id}"`).join(", ")}); the data was written under another key: add that key after the current one to read it.`,
        );
      const sealed = base64ToBytes(wrapped.wrapped);
      try {
        const aad = new TextEncoder().encode(`loopguard-vault-key:${master.id}`);
        return openAesGcm(master.key, sealed, aad);
      } catch (error) {
        throw new VaultKeyError(
          `[redact] ${name}: key "${master.id}" does not decrypt the data key written under that id: the key is wrong (changed without rotation) or the key store is damaged.`,
          { cause: error },
        );
      }
    },
  };
}

/** Makes a new master key as `id:base64`, for `LOOPGUARD_VAULT_KEY` or a key file. */
export function generateVaultKey(id = "k1"): string {
  if (!KEY_ID.test(id))
    throw new RedactOptionsError(
      `[redact] generateVaultKey: the id must be 1 to 64 letters, digits, "_", "." or "-"; got ${JSON.stringify(id)}.`,
    );
  return `${id}:${bytesToBase64(randomBytes(32))}`;
}

/** Options of `envKeyProvider`. */
export interface EnvKeyProviderOptions {
  /** The variable holding `id:base64` keys, current first, comma-separated. Default `LOOPGUARD_VAULT_KEY`. */
  variable?: string;
  /** Where to read it. Default `process.env` (on a Worker, pass the `env` binding object). */
  env?: Record<string, string | undefined>;
}

/**
 * Master keys from an environment variable: `LOOPGUARD_VAULT_KEY="k2:<base64>,k1:<base64>"`
 * (the first is current; older ones stay until `keyring.rotate()` has run).
 *
 * How it fails: a missing or malformed variable is a `VaultKeyError` here, at creation.
 *
 * @example
 * const keys = envKeyProvider(); // reads LOOPGUARD_VAULT_KEY
 */
export function envKeyProvider(options: EnvKeyProviderOptions = {}): KeyProvider {
  const variable = options.variable ?? "LOOPGUARD_VAULT_KEY";
  const env =
    options.env ??
    (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ??
    {};
  const value = env[variable];
  if (value === undefined || value.trim() === "")
    throw new VaultKeyError(
      `[redact] envKeyProvider: ${variable} is not set; set it to "k1:<32 random bytes in base64>" (generateVaultKey("k1") makes one), or use fileKeyProvider({ path }) or kmsKeyProvider({ wrap, unwrap }).`,
    );
  return localProvider(`env:${variable}`, parseKeys(value, `env:${variable}`));
}

/** Options of `kmsKeyProvider`: your KMS's encrypt and decrypt calls. */
export interface KmsKeyProviderOptions {
  /** For diagnostics. Default `kms`. */
  name?: string;
  /** Encrypts a data key under the KMS's current key; returns its id and the ciphertext in base64. */
  wrap: (dataKey: Uint8Array) => Promise<WrappedKey> | WrappedKey;
  /** Decrypts a wrapped data key. */
  unwrap: (wrapped: WrappedKey) => Promise<Uint8Array> | Uint8Array;
}

/**
 * Master keys held by a KMS (AWS KMS, GCP KMS, Vault transit…): data keys are wrapped and
 * unwrapped by your callbacks, so the master key never enters the process.
 *
 * How it fails: a callback that throws or returns something else becomes a `VaultKeyError`
 * naming the provider, with the callback's error as its cause.
 *
 * @example
 * const keys = kmsKeyProvider({
 *   wrap: async (key) => ({ keyId: "alias/loopguard", wrapped: await kms.encrypt(key) }),
 *   unwrap: async ({ wrapped }) => kms.decrypt(wrapped),
 * });
 */
export function kmsKeyProvider(options: KmsKeyProviderOptions): KeyProvider {
  if (typeof options?.wrap !== "function" || typeof options.unwrap !== "function")
    throw new RedactOptionsError(
      "[redact] kmsKeyProvider needs { wrap(dataKey), unwrap({ keyId, wrapped }) }: your KMS's encrypt and decrypt calls.",
    );
  const name = options.name ?? "kms";
  const guard = async <T>(
    what: string,
    call: () => Promise<T> | T,
    check: (value: T) => boolean,
  ): Promise<T> => {
    let value: T;
    try {
      value = await call();
    } catch (error) {
      throw new VaultKeyError(
        `[redact] ${name}: ${what} failed: ${(error as Error)?.message ?? String(error)}`,
        {
          cause: error,
        },
      );
    }
    if (!check(value))
      throw new VaultKeyError(`[redact] ${name}: ${what} returned something else than expected.`);
    return value;
  };
  return {
    name,
    wrapKey: (dataKey) =>
      guard(
        "wrap",
        () => options.wrap(dataKey),
        (value) => typeof value?.keyId === "string" && typeof value.wrapped === "string",
      ),
    unwrapKey: (wrapped) =>
      guard(
        "unwrap",
        () => options.unwrap(wrapped),
        (value) => value instanceof Uint8Array && value.length === 32,
      ),
  };
}
