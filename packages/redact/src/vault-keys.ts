import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
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

interface MasterKey {
  id: string;
  key: Buffer;
}

/** Parses `id:base64` keys (comma- or line-separated; the first is current). */
function parseKeys(text: string, source: string): MasterKey[] {
  const keys: MasterKey[] = [];
  for (const [index, raw] of text.split(/[,\n]/).entries()) {
    const entry = raw.trim();
    if (entry === "" || entry.startsWith("#")) continue;
    const colon = entry.indexOf(":");
    const id = colon === -1 ? "default" : entry.slice(0, colon);
    const encoded = colon === -1 ? entry : entry.slice(colon + 1);
    const key = Buffer.from(encoded, "base64");
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

function localProvider(name: string, keys: MasterKey[]): KeyProvider {
  const current = keys[0]!;
  return {
    name,
    wrapKey(dataKey) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", current.key, iv);
      cipher.setAAD(Buffer.from(`loopguard-vault-key:${current.id}`));
      const sealed = Buffer.concat([
        iv,
        cipher.update(dataKey),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return { keyId: current.id, wrapped: sealed.toString("base64") };
    },
    unwrapKey(wrapped) {
      const master = keys.find((key) => key.id === wrapped.keyId);
      if (master === undefined)
        throw new VaultKeyError(
          `[redact] ${name} holds no key "${wrapped.keyId}" (it holds ${keys.map((key) => `"${key.id}"`).join(", ")}); the data was written under another key: add that key after the current one to read it.`,
        );
      const sealed = Buffer.from(wrapped.wrapped, "base64");
      try {
        const decipher = createDecipheriv("aes-256-gcm", master.key, sealed.subarray(0, 12));
        decipher.setAAD(Buffer.from(`loopguard-vault-key:${master.id}`));
        decipher.setAuthTag(sealed.subarray(sealed.length - 16));
        return Buffer.concat([
          decipher.update(sealed.subarray(12, sealed.length - 16)),
          decipher.final(),
        ]);
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
  return `${id}:${randomBytes(32).toString("base64")}`;
}

/** Options of `envKeyProvider`. */
export interface EnvKeyProviderOptions {
  /** The variable holding `id:base64` keys, current first, comma-separated. Default `LOOPGUARD_VAULT_KEY`. */
  variable?: string;
  /** Where to read it. Default `process.env`. */
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
  const env = options.env ?? process.env;
  const value = env[variable];
  if (value === undefined || value.trim() === "")
    throw new VaultKeyError(
      `[redact] envKeyProvider: ${variable} is not set; set it to "k1:<32 random bytes in base64>" (generateVaultKey("k1") makes one), or use fileKeyProvider({ path }) or kmsKeyProvider({ wrap, unwrap }).`,
    );
  return localProvider(`env:${variable}`, parseKeys(value, `env:${variable}`));
}

/** Options of `fileKeyProvider`. */
export interface FileKeyProviderOptions {
  /** A file of `id:base64` lines, current first; readable by its owner only (0600). */
  path: string;
  /** Create the file with a new key when it does not exist (0600). Default false. */
  create?: boolean;
}

/**
 * Master keys from a file only its owner can read: one `id:base64` line per key, current first.
 *
 * How it fails: a missing file (without `create`), a file that others can read, or a malformed
 * line is a `VaultKeyError` here, at creation.
 *
 * @example
 * const keys = fileKeyProvider({ path: "/etc/loopguard/vault.key" });
 */
export function fileKeyProvider(options: FileKeyProviderOptions): KeyProvider {
  if (typeof options?.path !== "string" || options.path === "")
    throw new RedactOptionsError("[redact] fileKeyProvider needs { path } of a key file.");
  const { path } = options;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (error) {
    if (options.create !== true)
      throw new VaultKeyError(
        `[redact] fileKeyProvider: cannot read the key file ${path} (${(error as Error).message}); create it with a line from generateVaultKey("k1") and chmod 600, or pass create: true.`,
        { cause: error },
      );
    // Written whole under another name, then linked into place: a process that starts at the
    // same moment either finds no file or a complete one, and the first link wins.
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(temporary, `${generateVaultKey("k1")}\n`, { mode: 0o600, flag: "wx" });
    try {
      linkSync(temporary, path);
    } catch (linkError) {
      if ((linkError as NodeJS.ErrnoException).code !== "EEXIST") throw linkError;
    } finally {
      unlinkSync(temporary);
    }
    mode = statSync(path).mode;
  }
  if ((mode & 0o077) !== 0)
    throw new VaultKeyError(
      `[redact] fileKeyProvider: the key file ${path} can be read by others (mode ${(mode & 0o777).toString(8)}); run chmod 600 ${path}.`,
    );
  return localProvider(`file:${path}`, parseKeys(readFileSync(path, "utf8"), `file:${path}`));
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
