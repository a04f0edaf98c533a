import { hmac } from "@noble/hashes/hmac";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex } from "@noble/hashes/utils";
import { openAesGcm, randomBytes, sealAesGcm } from "./aes-gcm.js";
import { base64ToBytes, bytesToBase64 } from "./base64.js";
import {
  RedactOptionsError,
  VaultDataError,
  VaultForgottenError,
  VaultKeyError,
} from "./redact-error.js";
import type { KeyProvider, WrappedKey } from "./vault-keys.js";

/** One subject's data key, wrapped under a master key. */
export interface SubjectKeyRecord extends WrappedKey {
  subject: string;
  /** When the data key was made (ms since the epoch). */
  createdAt: number;
}

/**
 * Where subjects' wrapped data keys are kept: the one place that must forget. Deleting a
 * subject's record crypto-shreds every value sealed under its key, wherever the sealed copies
 * are (run files, SQLite, PostgreSQL, backups); the logs keep their tokens.
 * `fileSubjectKeyStore` and `memorySubjectKeyStore` implement it; a database table with
 * (subject primary key, key_id, wrapped, created_at) does too.
 *
 * How it fails: a store that throws fails the vault call (fail closed).
 */
export interface SubjectKeyStore {
  readonly name: string;
  get(subject: string): SubjectKeyRecord | undefined | Promise<SubjectKeyRecord | undefined>;
  /** Adds or replaces a subject's record, durably, before it resolves. */
  put(record: SubjectKeyRecord): void | Promise<void>;
  /** Deletes a subject's record, durably; whether one was there. */
  delete(subject: string): boolean | Promise<boolean>;
  list(): SubjectKeyRecord[] | Promise<SubjectKeyRecord[]>;
}

/** Keeps subjects' keys in memory (tests, short-lived processes). */
export function memorySubjectKeyStore(): SubjectKeyStore {
  const records = new Map<string, SubjectKeyRecord>();
  return {
    name: "memory",
    get: (subject) => records.get(subject),
    put: (record) => {
      records.set(record.subject, { ...record });
    },
    delete: (subject) => records.delete(subject),
    list: () => [...records.values()],
  };
}

/** Options of `createKeyring`. */
export interface KeyringOptions {
  keys: KeyProvider;
  store: SubjectKeyStore;
  /** The clock, for `createdAt`. Default `Date.now`. */
  now?: () => number;
}

/**
 * One data key per subject (a customer: `context.subject`, else the tenant, else the run),
 * wrapped by a `KeyProvider` and kept in a `SubjectKeyStore`. `forget(subject)` deletes the
 * key: every value sealed under it, in every file and table, can no longer be read
 * (crypto-shredding), while logs keep their tokens. `rotate()` rewraps every data key under
 * the provider's current master key.
 */
export interface Keyring {
  /** The subject's data key, made (and stored) on first use. */
  dataKey(subject: string): Promise<Uint8Array>;
  /** The same, synchronously: the provider and the store must answer without a Promise. */
  dataKeySync(subject: string): Uint8Array;
  /** The subject's data key if it still exists; undefined once forgotten (never made anew). */
  existingKey(subject: string): Promise<Uint8Array | undefined>;
  existingKeySync(subject: string): Uint8Array | undefined;
  /** Crypto-shreds the subject: deletes its data key; whether it had one. */
  forget(subject: string): Promise<boolean>;
  /** Rewraps every data key under the current master key; how many were rewrapped. */
  rotate(): Promise<number>;
}

const SUBJECT = /^[^\u0000-\u001f]{1,200}$/;

function checkSubject(subject: unknown): string {
  if (typeof subject !== "string" || !SUBJECT.test(subject))
    throw new RedactOptionsError(
      `[redact] a vault subject must be a string of 1 to 200 printable characters (a customer, tenant or run id); got ${typeof subject === "string" ? JSON.stringify(subject.slice(0, 40)) : typeof subject}.`,
    );
  return subject;
}

const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof (value as Promise<unknown> | undefined)?.then === "function";

function syncOnly<T>(value: T | Promise<T>, what: string): T {
  if (isPromise(value))
    throw new RedactOptionsError(
      `[redact] ${what} answered with a Promise: a synchronous vault needs a synchronous key provider and store (envKeyProvider or fileKeyProvider with fileSubjectKeyStore); with a KMS, get the data key first with await keyring.dataKey(subject).`,
    );
  return value;
}

/**
 * Creates a keyring: per-subject data keys under a provider's master keys.
 *
 * How it fails: a missing or wrong master key is a `VaultKeyError`; a damaged store a
 * `VaultDataError`; nothing is ever written in clear.
 *
 * @example
 * const keyring = createKeyring({
 *   keys: envKeyProvider(),
 *   store: fileSubjectKeyStore({ path: ".loopguard/vault/subject-keys.json" }),
 * });
 * await keyring.forget("cust_42"); // every sealed value of cust_42 is now unreadable
 */
export function createKeyring(options: KeyringOptions): Keyring {
  const { keys, store } = options ?? ({} as KeyringOptions);
  if (typeof keys?.wrapKey !== "function" || typeof keys.unwrapKey !== "function")
    throw new RedactOptionsError(
      "[redact] createKeyring needs keys: a KeyProvider such as envKeyProvider(), fileKeyProvider({ path }) or kmsKeyProvider({ wrap, unwrap }).",
    );
  if (
    typeof store?.get !== "function" ||
    typeof store.put !== "function" ||
    typeof store.delete !== "function"
  )
    throw new RedactOptionsError(
      "[redact] createKeyring needs store: a SubjectKeyStore such as fileSubjectKeyStore({ path }).",
    );
  const now = options.now ?? Date.now;
  const cache = new Map<string, Uint8Array>();
  const record = (
    subject: string,
    wrapped: { keyId: string; wrapped: string },
  ): SubjectKeyRecord => ({
    subject,
    keyId: wrapped.keyId,
    wrapped: wrapped.wrapped,
    createdAt: now(),
  });
  return {
    async dataKey(subject) {
      checkSubject(subject);
      const known = await this.existingKey(subject);
      if (known !== undefined) return known;
      const dataKey = randomBytes(32);
      const made = record(subject, await keys.wrapKey(dataKey));
      await store.put(made);
      // Two processes may make a subject's first key at once: the store keeps one, and both
      // use the one it kept (a store's put may refuse to replace a key of the same master).
      const kept = await store.get(subject);
      const chosen =
        kept === undefined || kept.wrapped === made.wrapped ? dataKey : await keys.unwrapKey(kept);
      cache.set(subject, chosen);
      return chosen;
    },
    dataKeySync(subject) {
      checkSubject(subject);
      const known = this.existingKeySync(subject);
      if (known !== undefined) return known;
      const dataKey = randomBytes(32);
      const made = record(subject, syncOnly(keys.wrapKey(dataKey), keys.name));
      syncOnly(store.put(made), store.name);
      const kept = syncOnly(store.get(subject), store.name);
      const chosen =
        kept === undefined || kept.wrapped === made.wrapped
          ? dataKey
          : syncOnly(keys.unwrapKey(kept), keys.name);
      cache.set(subject, chosen);
      return chosen;
    },
    async existingKey(subject) {
      checkSubject(subject);
      const cached = cache.get(subject);
      if (cached !== undefined) return cached;
      const stored = await store.get(subject);
      if (stored === undefined) return undefined;
      const dataKey = await keys.unwrapKey(stored);
      cache.set(subject, dataKey);
      return dataKey;
    },
    existingKeySync(subject) {
      checkSubject(subject);
      const cached = cache.get(subject);
      if (cached !== undefined) return cached;
      const stored = syncOnly(store.get(subject), store.name);
      if (stored === undefined) return undefined;
      const dataKey = syncOnly(keys.unwrapKey(stored), keys.name);
      cache.set(subject, dataKey);
      return dataKey;
    },
    async forget(subject) {
      checkSubject(subject);
      cache.get(subject)?.fill(0);
      cache.delete(subject);
      return await store.delete(subject);
    },
    async rotate() {
      let count = 0;
      for (const stored of await store.list()) {
        const dataKey = await keys.unwrapKey(stored);
        const wrapped = await keys.wrapKey(dataKey);
        if (wrapped.keyId === stored.keyId && wrapped.wrapped === stored.wrapped) continue;
        await store.put({ ...stored, keyId: wrapped.keyId, wrapped: wrapped.wrapped });
        count++;
      }
      return count;
    },
  };
}

/** A vault entry sealed with its subject's data key (AES-256-GCM). */
export interface SealedVaultEntry {
  v: 1;
  subject: string;
  token: string;
  type: string;
  /** When it was sealed (ms since the epoch), for retention. */
  at: number;
  /** Base64 of IV, ciphertext and tag; the plaintext is `{ "value": … }`. */
  sealed: string;
  /**
   * Which data key sealed it: an HMAC fingerprint of the key (reveals nothing of it). A
   * subject forgotten and seen again gets a new key; its old entries are told apart by this.
   */
  kid?: string;
}

/** A one-way fingerprint of a data key, to tell which key sealed an entry. */
export function dataKeyId(dataKey: Uint8Array): string {
  return bytesToHex(
    hmac(sha256, dataKey, new TextEncoder().encode("loopguard-vault-data-key-id")),
  ).slice(0, 16);
}

/** A vault entry in clear: the value behind a token. */
export interface VaultEntryInClear {
  type: string;
  token: string;
  value: unknown;
}

const aadOf = (subject: string, token: string, type: string) =>
  new TextEncoder().encode(`loopguard-vault-entry\u0000${subject}\u0000${token}\u0000${type}`);

/**
 * Seals one vault entry with its subject's data key: AES-256-GCM with a random IV, bound to
 * the subject, token and type (a sealed value moved under another token does not open).
 *
 * @example
 * const sealed = sealVaultEntry(await keyring.dataKey("cust_42"), "cust_42", entry);
 */
export function sealVaultEntry(
  dataKey: Uint8Array,
  subject: string,
  entry: VaultEntryInClear,
  at = Date.now(),
): SealedVaultEntry {
  if (!(dataKey instanceof Uint8Array) || dataKey.length !== 32)
    throw new VaultKeyError(
      "[redact] sealVaultEntry needs the subject's 32-byte data key (keyring.dataKey(subject)).",
    );
  const plaintext = new TextEncoder().encode(JSON.stringify({ value: entry.value }));
  const sealed = sealAesGcm(dataKey, plaintext, aadOf(subject, entry.token, entry.type));
  plaintext.fill(0);
  return {
    v: 1,
    subject,
    token: entry.token,
    type: entry.type,
    at,
    sealed: bytesToBase64(sealed),
    kid: dataKeyId(dataKey),
  };
}

/** Whether `value` has the shape of a sealed entry. */
export function isSealedVaultEntry(value: unknown): value is SealedVaultEntry {
  const entry = value as SealedVaultEntry | null;
  return (
    typeof entry === "object" &&
    entry !== null &&
    entry.v === 1 &&
    typeof entry.subject === "string" &&
    typeof entry.token === "string" &&
    typeof entry.type === "string" &&
    typeof entry.at === "number" &&
    typeof entry.sealed === "string"
  );
}

/**
 * Opens a sealed entry with its subject's data key (`undefined` when the subject was
 * forgotten: throws `VaultForgottenError`).
 *
 * How it fails: a wrong key or a changed ciphertext is a `VaultDataError` (the GCM tag does
 * not check); no partial plaintext is ever returned.
 */
export function openVaultEntry(
  dataKey: Uint8Array | undefined,
  sealed: SealedVaultEntry,
): VaultEntryInClear {
  if (!isSealedVaultEntry(sealed))
    throw new VaultDataError(
      "[redact] openVaultEntry: not a sealed vault entry (v, subject, token, type, at, sealed).",
    );
  // No key, or a newer key than the one that sealed it: the subject was forgotten since.
  if (dataKey === undefined || (sealed.kid !== undefined && sealed.kid !== dataKeyId(dataKey)))
    throw new VaultForgottenError(
      `[redact] ${sealed.token} belongs to subject "${sealed.subject}", whose data was forgotten (the key that sealed it is deleted): the value cannot be revealed; the token stays a token.`,
    );
  const bytes = base64ToBytes(sealed.sealed);
  try {
    const plaintext = openAesGcm(dataKey, bytes, aadOf(sealed.subject, sealed.token, sealed.type));
    const { value } = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(plaintext)) as {
      value: unknown;
    };
    plaintext.fill(0);
    return { type: sealed.type, token: sealed.token, value };
  } catch (error) {
    throw new VaultDataError(
      `[redact] the sealed value of ${sealed.token} (subject "${sealed.subject}") does not open: the data was changed, or sealed under another key.`,
      { cause: error },
    );
  }
}
