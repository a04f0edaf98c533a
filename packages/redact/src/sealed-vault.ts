import { RedactOptionsError, VaultForgottenError } from "./redact-error.js";
import {
  isSealedVaultEntry,
  type Keyring,
  openVaultEntry,
  type SealedVaultEntry,
  sealVaultEntry,
} from "./subject-keys.js";
import { Vault, type VaultOptions } from "./vault.js";

/** Options of `openSealedVault`. */
export interface SealedVaultOptions extends VaultOptions {
  /** Where subjects' data keys live (see `createKeyring`). */
  keyring: Keyring;
  /** Whose data this vault tokenises: the customer, else the tenant, else the run. */
  subject: string;
  /** The entries stored before, in the order they were sealed (to give the same tokens again). */
  sealed?: readonly SealedVaultEntry[];
  /**
   * Receives each new sealed entry, synchronously, before its token is handed out: store it
   * (append to a file, insert a row) so a crash loses no value a log may already name.
   */
  onSealed?: (entry: SealedVaultEntry) => void;
  /** Values sealed longer ago than this are not revealed (retention by age). */
  retentionMs?: number;
  /** The clock. Default `Date.now`. */
  now?: () => number;
}

/**
 * A `Vault` whose values are sealed at rest: each new value is sealed with its subject's data
 * key and handed to `onSealed` before its token exists; values of a forgotten subject, or past
 * retention, keep their tokens and can never be revealed (`reveal` throws
 * `VaultForgottenError` rather than hand a tool a token as if it were the value).
 */
export class SealedVault extends Vault {
  readonly #keyring: Keyring;
  readonly #subject: string;
  readonly #dataKey: Uint8Array;
  readonly #onSealed: ((entry: SealedVaultEntry) => void) | undefined;
  readonly #now: () => number;
  /** Tokens whose values are gone, and why. */
  readonly #gone = new Map<string, string>();
  /** Which subject each token belongs to. */
  readonly #owners = new Map<string, string>();
  #replaying = true;

  /** Prefer `openSealedVault(options)`, which fetches the data keys first. */
  constructor(
    options: SealedVaultOptions,
    keys: { dataKey: Uint8Array; existing: ReadonlyMap<string, Uint8Array | undefined> },
  ) {
    const { keyring, subject, sealed, onSealed, retentionMs, now, ...vaultOptions } = options;
    super(vaultOptions);
    this.#keyring = keyring;
    this.#subject = subject;
    this.#dataKey = keys.dataKey;
    this.#onSealed = onSealed;
    this.#now = now ?? Date.now;
    for (const entry of sealed ?? []) {
      if (!isSealedVaultEntry(entry))
        throw new RedactOptionsError(
          "[redact] openSealedVault: sealed must hold the entries onSealed was given, in order.",
        );
      const expired = retentionMs !== undefined && this.#now() - entry.at > retentionMs;
      let value: unknown;
      try {
        if (expired) throw new VaultForgottenError("expired");
        value = openVaultEntry(keys.existing.get(entry.subject), entry).value;
      } catch (error) {
        if ((error as Error)?.name !== "VaultForgottenError") throw error;
        this.#gone.set(
          entry.token,
          expired
            ? `its value outlived the retention of ${Math.round(retentionMs / 86_400_000)} days`
            : `its subject "${entry.subject}" was forgotten`,
        );
        value = { gone: entry.token };
      }
      if (super.token(entry.type, value) !== entry.token)
        throw new RedactOptionsError(
          `[redact] openSealedVault: the sealed entries do not replay to the same tokens (at ${entry.token}); they are out of order or from another vault.`,
        );
      this.#owners.set(entry.token, entry.subject);
    }
    if (this.#gone.size > 0) this.dropValues(new Set(this.#gone.keys()));
    this.#replaying = false;
  }

  /** The token for a value; a new value is sealed and handed to `onSealed` first. */
  override token(type: string, value: unknown): string {
    const before = this.size;
    const token = super.token(type, value);
    if (!this.#replaying && this.size > before) {
      this.#owners.set(token, this.#subject);
      this.#onSealed?.(
        sealVaultEntry(this.#dataKey, this.#subject, { type, token, value }, this.#now()),
      );
    }
    return token;
  }

  /** Puts real values back; throws `VaultForgottenError` if any token's value is gone. */
  override reveal<T>(value: T): T {
    if (this.#gone.size > 0) this.#check(value, new Set());
    return super.reveal(value);
  }

  #check(value: unknown, seen: Set<unknown>): void {
    if (typeof value === "string") {
      if (!value.includes("<")) return;
      for (const [token, why] of this.#gone)
        if (value.includes(token))
          throw new VaultForgottenError(
            `[redact] ${token} cannot be revealed: ${why} (crypto-shredded); the token stays a token.`,
          );
      return;
    }
    if (typeof value !== "object" || value === null || seen.has(value)) return;
    seen.add(value);
    for (const item of value instanceof Map ? value.values() : Object.values(value))
      this.#check(item, seen);
  }

  /**
   * Forgets a subject everywhere: deletes its data key from the keyring's store (every sealed
   * copy of its values, in any file or table, can no longer be opened) and drops its values
   * from this vault. Logs keep their tokens. Whether the subject had a key.
   */
  async forget(subject: string): Promise<boolean> {
    const forgotten = await this.#keyring.forget(subject);
    const tokens = new Set<string>();
    for (const [token, owner] of this.#owners) if (owner === subject) tokens.add(token);
    for (const token of tokens) this.#gone.set(token, `its subject "${subject}" was forgotten`);
    this.dropValues(tokens);
    if (subject === this.#subject) this.#dataKey.fill(0);
    return forgotten;
  }
}

/**
 * Opens a vault sealed at rest: fetches the data keys it needs from the keyring (a KMS may
 * answer asynchronously), replays the stored entries into the same tokens, and seals every
 * new value before its token is handed out. After `forget(subject)` on this vault, seal no
 * more values for that subject with it: open a new one.
 *
 * How it fails: a missing or wrong master key is a `VaultKeyError`, a changed entry a
 * `VaultDataError`, entries out of order a `RedactOptionsError`; nothing is written in clear.
 *
 * @example
 * const vault = await openSealedVault({
 *   keyring: createKeyring({ keys: envKeyProvider(), store: fileSubjectKeyStore({ path }) }),
 *   subject: "cust_42",
 *   sealed: storedEntries,
 *   onSealed: (entry) => appendFileSync(file, `${JSON.stringify(entry)}\n`),
 * });
 * const prompt = vault.tokenize("Refund jane@acme.io"); // "Refund <EMAIL_1>"
 * await vault.forget("cust_42"); // <EMAIL_1> can never be revealed again, anywhere
 */
export async function openSealedVault(options: SealedVaultOptions): Promise<SealedVault> {
  if (
    typeof options !== "object" ||
    options === null ||
    typeof options.keyring?.dataKey !== "function"
  )
    throw new RedactOptionsError(
      "[redact] openSealedVault needs { keyring, subject }: a keyring from createKeyring and whose data the vault holds.",
    );
  if (options.onSealed !== undefined && typeof options.onSealed !== "function")
    throw new RedactOptionsError(
      "[redact] openSealedVault: onSealed must be a function (entry) => void.",
    );
  const existing = new Map<string, Uint8Array | undefined>();
  for (const entry of options.sealed ?? []) {
    if (isSealedVaultEntry(entry) && !existing.has(entry.subject))
      existing.set(entry.subject, await options.keyring.existingKey(entry.subject));
  }
  const dataKey = await options.keyring.dataKey(options.subject);
  return new SealedVault(options, { dataKey, existing });
}
