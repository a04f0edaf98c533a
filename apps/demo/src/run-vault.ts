import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { isValidRunId } from "@loopguard/checkpoint";
import { type SupportVault, supportVault, type VaultEntry } from "@loopguard/evals";
import {
  createKeyring,
  envKeyProvider,
  isSealedVaultEntry,
  type KeyProvider,
  type Keyring,
  openVaultEntry,
  type SealedVaultEntry,
  type SubjectKeyRecord,
  type SubjectKeyStore,
  sealVaultEntry,
  VaultDataError,
  VaultForgottenError,
} from "@loopguard/redact";
import { fileKeyProvider, fileSubjectKeyStore } from "@loopguard/redact/node";
import { UsageError } from "./usage-error.js";

/** Where a run's vault file lives: `<vault dir>/<runId>.jsonl`. */
export function vaultFileOf(vaultDir: string, runId: string): string {
  if (!isValidRunId(runId))
    throw new UsageError(
      `run id ${JSON.stringify(String(runId).slice(0, 60))} is invalid: use letters, digits, "_", ".", ":" or "-"`,
    );
  return join(vaultDir, `${runId}.jsonl`);
}

/** The environment variable the CLI reads its vault master keys from (`id:base64`, current first). */
export const vaultKeyVariable = "LOOPGUARD_VAULT_KEY";

/**
 * The master keys of the CLI's vault: `LOOPGUARD_VAULT_KEY` when set, else the key file
 * `<vault dir>/master.key` (0600), made on first use so the demo runs on a clone alone. In
 * production set the variable (or build the vault on `kmsKeyProvider`), so the key does not
 * sit beside the data it protects.
 */
export function vaultKeys(vaultDir: string, env = process.env): KeyProvider {
  if (env[vaultKeyVariable] !== undefined && env[vaultKeyVariable] !== "")
    return envKeyProvider({ variable: vaultKeyVariable, env });
  mkdirSync(vaultDir, { recursive: true, mode: 0o700 });
  return fileKeyProvider({ path: join(vaultDir, "master.key"), create: true });
}

/** The keyring of the CLI's vault: one data key per subject in `<vault dir>/subject-keys.json`. */
export function vaultKeyring(vaultDir: string, keys = vaultKeys(vaultDir)): Keyring {
  return createKeyring({
    keys,
    store: fileSubjectKeyStore({ path: join(vaultDir, "subject-keys.json") }),
  });
}

/** Options of `runVault`. */
export interface RunVaultOptions {
  /**
   * Whose data this run holds: the customer (`context.subject`), else the tenant, else the
   * run id (the default). `loopguard forget <subject>` forgets every run of that subject.
   */
  subject?: string;
  /** The master keys. Default `vaultKeys(vaultDir)`. */
  keys?: KeyProvider;
  /** Values older than this are no longer revealed (retention by age). Default: kept. */
  retentionMs?: number;
  /** The clock. Default `Date.now`. */
  now?: () => number;
}

/** A value that can no longer be revealed: its subject was forgotten, or it outlived retention. */
interface Gone {
  token: string;
  why: string;
}

function appendLine(file: string, line: string): void {
  const fd = openSync(file, "a", 0o600);
  try {
    writeSync(fd, `${line}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(file, 0o600);
}

function rewrite(file: string, lines: readonly string[]): void {
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, "w", 0o600);
  try {
    writeSync(fd, lines.map((line) => `${line}\n`).join(""));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}

/** Reads a vault file's lines; a torn last line (a crash mid-write) is cut off, never handed out. */
function readVaultLines(file: string): { line: string; number: number }[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8");
  if (text !== "" && !text.endsWith("\n"))
    truncateSync(file, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1)));
  const lines = text.split("\n");
  const out: { line: string; number: number }[] = [];
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    if (index === lines.length - 1) break; // torn tail
    out.push({ line, number: index + 1 });
  }
  return out;
}

function parseSealed(source: string, line: string, number: number): SealedVaultEntry | VaultEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (error) {
    throw new VaultDataError(
      `[redact] ${source} is damaged at line ${number} (${(error as Error).message}); its run cannot reveal its tokens (the tokens stay tokens). Restore it from a backup, or delete it to give up those values.`,
    );
  }
  if (isSealedVaultEntry(parsed) || (parsed as { gone?: unknown })?.gone !== undefined)
    return parsed as SealedVaultEntry;
  const clear = parsed as VaultEntry | null;
  if (
    clear &&
    typeof clear.type === "string" &&
    typeof clear.token === "string" &&
    "value" in clear
  )
    return clear;
  throw new VaultDataError(
    `[redact] ${source} is damaged at line ${number}: not a sealed vault entry. Restore it from a backup, or delete it to give up those values.`,
  );
}

/** What a sealed vault is built from: stored lines, the keys, and where new sealed lines go. */
interface SealedVaultParts {
  /** Where the lines come from, for error messages (`<file>` or `<table> of run <id>`). */
  source: string;
  lines: readonly { line: string; number: number }[];
  /** The data key of a subject, or undefined once forgotten. */
  keyOf: (subject: string) => Uint8Array | undefined;
  /** The data key new values are sealed with (made on first use). */
  writeKey: () => Uint8Array;
  subject: string;
  /** Receives each new sealed line, synchronously, before its token is handed out. */
  onSealed: (line: string) => void;
  /** Receives the lines again when some were written in clear by an older version (now sealed). */
  onMigrated?: (lines: readonly string[]) => void;
  retentionMs?: number;
  now: () => number;
}

/** Builds a run's vault from sealed lines: the shared core of the file and PostgreSQL vaults. */
function sealedVault(parts: SealedVaultParts): SupportVault {
  const { source, keyOf, subject, now } = parts;
  const entries: VaultEntry[] = [];
  const gone = new Map<string, Gone>();
  let migrated = false;
  const lines: string[] = [];
  for (const { line, number } of parts.lines) {
    const stored = parseSealed(source, line, number);
    let sealed: SealedVaultEntry | { gone: string; token: string; type: string; subject: string };
    if (!("v" in stored) && !("gone" in stored)) {
      // Written in clear by an older version: seal it now.
      sealed = sealVaultEntry(parts.writeKey(), subject, stored, now());
      migrated = true;
    } else sealed = stored as SealedVaultEntry;
    lines.push(JSON.stringify(sealed));
    if ("gone" in sealed) {
      gone.set(sealed.token, {
        token: sealed.token,
        why: "its value outlived the retention period",
      });
      entries.push({ type: sealed.type, token: sealed.token, value: { gone: sealed.token } });
      continue;
    }
    const expired = parts.retentionMs !== undefined && now() - sealed.at > parts.retentionMs;
    const dataKey = expired ? undefined : keyOf(sealed.subject);
    if (dataKey === undefined) {
      // Forgotten or expired: the token keeps its number (so no later value takes it) and
      // can never be revealed.
      gone.set(sealed.token, {
        token: sealed.token,
        why: expired
          ? `its value outlived the retention of ${Math.round((parts.retentionMs ?? 0) / 86_400_000)} days`
          : `its subject "${sealed.subject}" was forgotten`,
      });
      entries.push({ type: sealed.type, token: sealed.token, value: { gone: sealed.token } });
      continue;
    }
    try {
      entries.push(openVaultEntry(dataKey, sealed));
    } catch (error) {
      // By name: the error may come from another copy of @loopguard/redact.
      if (
        VaultForgottenError.isInstance(error) &&
        (error as Error).name === "VaultForgottenError"
      ) {
        // Sealed under a key deleted since (the subject was forgotten, then seen again).
        gone.set(sealed.token, {
          token: sealed.token,
          why: `its subject "${sealed.subject}" was forgotten`,
        });
        entries.push({ type: sealed.type, token: sealed.token, value: { gone: sealed.token } });
        continue;
      }
      throw new VaultDataError(`${(error as Error).message} (${source}, line ${number})`, {
        cause: error,
      });
    }
  }
  if (migrated) parts.onMigrated?.(lines);
  const vault = supportVault({
    entries,
    onEntry: (entry) =>
      parts.onSealed(JSON.stringify(sealVaultEntry(parts.writeKey(), subject, entry, now()))),
  });
  if (gone.size === 0) return vault;
  const tokens = new RegExp(
    [...gone.keys()].map((token) => token.replace(/[<>]/g, "\\$&")).join("|"),
  );
  const check = (value: unknown, seen = new Set<unknown>()): void => {
    if (typeof value === "string") {
      const found = tokens.exec(value);
      if (found !== null) {
        const why = gone.get(found[0])!.why;
        throw new VaultForgottenError(
          `[redact] ${found[0]} cannot be revealed: ${why} (crypto-shredded); the token stays a token and the tool does not run with it.`,
        );
      }
      return;
    }
    if (typeof value !== "object" || value === null || seen.has(value)) return;
    seen.add(value);
    for (const item of value instanceof Map ? value.values() : Object.values(value))
      check(item, seen);
  };
  const guarded = Object.create(vault) as SupportVault;
  Object.defineProperty(guarded, "reveal", {
    value: <T>(value: T): T => {
      check(value);
      return vault.reveal(value);
    },
  });
  return guarded;
}

/**
 * The PII vault of one run, encrypted at rest: each tokenised value is sealed (AES-256-GCM)
 * with its subject's data key and appended, fsynced, to `<vault dir>/<runId>.jsonl` (0600,
 * directory 0700) before its token can reach the model or the log, so a run that crashes and
 * resumes in a new process reveals every token it wrote. Data keys are wrapped by the master
 * key (`LOOPGUARD_VAULT_KEY`, else `<vault dir>/master.key`) and kept in
 * `<vault dir>/subject-keys.json`: `forgetSubject` deletes one and every value of that subject
 * is gone, in every run file, while logs keep their tokens. A file written in clear by an
 * older version is sealed in place on first open.
 *
 * How it fails: a damaged file, a missing or wrong key are `[redact]` errors here (the run
 * cannot start or resume); revealing a token whose subject was forgotten, or whose value
 * outlived `retentionMs`, throws `VaultForgottenError` (the tool call fails; the token is never
 * sent on as if it were the value). Nothing is written in clear.
 */
export function runVault(
  vaultDir: string,
  runId: string,
  options: RunVaultOptions = {},
): SupportVault {
  const file = vaultFileOf(vaultDir, runId);
  mkdirSync(vaultDir, { recursive: true, mode: 0o700 });
  const keyring = vaultKeyring(vaultDir, options.keys ?? vaultKeys(vaultDir));
  const subject = options.subject ?? runId;
  return sealedVault({
    source: `the vault file ${file}`,
    lines: readVaultLines(file),
    keyOf: (owner) => keyring.existingKeySync(owner),
    writeKey: () => keyring.dataKeySync(subject),
    subject,
    onSealed: (line) => appendLine(file, line),
    onMigrated: (lines) => rewrite(file, lines),
    ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
    now: options.now ?? Date.now,
  });
}

/** The query method of a `pg` Pool or Client: all the PostgreSQL vault needs. */
export interface SqlQueryable {
  query(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

/**
 * Subjects' wrapped data keys in PostgreSQL: `<schema>.subject_keys` (subject primary key).
 * `DELETE` of a row is what crypto-shreds a customer for every worker at once. Create the
 * table with `createSubjectKeysTable` first.
 */
export function postgresSubjectKeyStore(pool: SqlQueryable, schema: string): SubjectKeyStore {
  const table = `"${schema}".subject_keys`;
  const recordOf = (row: Record<string, unknown>): SubjectKeyRecord => ({
    subject: String(row.subject),
    keyId: String(row.key_id),
    wrapped: String(row.wrapped),
    createdAt: Number(row.created_at),
  });
  return {
    name: `postgres:${table}`,
    async get(subject) {
      const { rows } = await pool.query(`SELECT * FROM ${table} WHERE subject = $1`, [subject]);
      return rows[0] === undefined ? undefined : recordOf(rows[0]);
    },
    async put(record) {
      await pool.query(
        // A first key made by two workers at once: the first insert wins (same master key id,
        // no update) and the keyring reads it back; a rotation (new key id) replaces it.
        `INSERT INTO ${table} (subject, key_id, wrapped, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (subject) DO UPDATE SET key_id = EXCLUDED.key_id, wrapped = EXCLUDED.wrapped
         WHERE ${table}.key_id <> EXCLUDED.key_id`,
        [record.subject, record.keyId, record.wrapped, record.createdAt],
      );
    },
    async delete(subject) {
      const { rowCount } = await pool.query(`DELETE FROM ${table} WHERE subject = $1`, [subject]);
      return (rowCount ?? 0) > 0;
    },
    async list() {
      const { rows } = await pool.query(`SELECT * FROM ${table} ORDER BY subject`);
      return rows.map(recordOf);
    },
  };
}

/** Creates `<schema>.subject_keys` if it does not exist (idempotent). */
export async function createSubjectKeysTable(pool: SqlQueryable, schema: string): Promise<void> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS "${schema}".subject_keys (subject text PRIMARY KEY, key_id text NOT NULL, wrapped text NOT NULL, created_at bigint NOT NULL)`,
  );
}

/** Options of `postgresRunVault`. */
export interface PostgresRunVaultOptions {
  keyring: Keyring;
  runId: string;
  /** Whose data the run holds (`context.subject`, else the tenant). Default: the run id. */
  subject?: string;
  /** The run's stored vault lines, in order (the `entry` column of `<schema>.vault_entries`). */
  lines: readonly string[];
  /** Receives each new sealed line, synchronously, to be written before the next append. */
  onSealed: (line: string) => void;
  retentionMs?: number;
  now?: () => number;
}

/**
 * A run's vault over PostgreSQL rows, sealed like the file vault: the keys of every subject
 * in `lines`, and the run subject's data key, are fetched first (a KMS may answer
 * asynchronously), so tokenising stays synchronous. The worker stores the sealed lines it is
 * handed instead of entries in clear.
 */
export async function postgresRunVault(options: PostgresRunVaultOptions): Promise<SupportVault> {
  const subject = options.subject ?? options.runId;
  const keys = new Map<string, Uint8Array | undefined>();
  const lines = options.lines.map((line, index) => ({ line, number: index + 1 }));
  for (const { line } of lines) {
    const owner = (JSON.parse(line) as { subject?: unknown })?.subject;
    if (typeof owner === "string" && !keys.has(owner))
      keys.set(owner, await options.keyring.existingKey(owner));
  }
  const writeKey = await options.keyring.dataKey(subject);
  keys.set(subject, writeKey);
  return sealedVault({
    source: `vault_entries of run ${options.runId}`,
    lines,
    keyOf: (owner) => keys.get(owner),
    writeKey: () => writeKey,
    subject,
    onSealed: options.onSealed,
    ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
    now: options.now ?? Date.now,
  });
}

/** What `forgetSubject` did. */
export interface ForgetResult {
  subject: string;
  /** Whether the subject had a data key (false: nothing was stored for it, or it was forgotten before). */
  forgotten: boolean;
  /** Sealed values of the subject found in run vault files (now unreadable). */
  values: number;
  /** Run vault files holding them. */
  runs: number;
}

/**
 * Forgets a subject (a customer, tenant or run id): deletes its data key, so every value it
 * sealed, in every run's vault file and any copy of one, can no longer be revealed
 * (crypto-shredding). Run logs and traces are untouched: they only ever held tokens. This is
 * what `loopguard forget <subject>` calls.
 *
 * How it fails: a missing or wrong master key, or a damaged key file, is a `[redact]` error
 * and nothing is deleted.
 */
export async function forgetSubject(
  vaultDir: string,
  subject: string,
  keys?: KeyProvider,
): Promise<ForgetResult> {
  let values = 0;
  let runs = 0;
  if (existsSync(vaultDir)) {
    for (const name of readdirSync(vaultDir)) {
      if (!name.endsWith(".jsonl")) continue;
      let count = 0;
      for (const { line } of readVaultLines(join(vaultDir, name))) {
        try {
          const parsed = JSON.parse(line) as { subject?: unknown };
          if (parsed?.subject === subject) count++;
        } catch {
          // A damaged line is reported when its run is opened.
        }
      }
      values += count;
      if (count > 0) runs++;
    }
  }
  const keyring = vaultKeyring(vaultDir, keys ?? vaultKeys(vaultDir));
  const forgotten = await keyring.forget(subject);
  return { subject, forgotten, values, runs };
}

/**
 * Retention by age: in every run vault file, values sealed more than `olderThanMs` ago are
 * replaced by a tombstone (token and type only), so they are gone from disk, not merely
 * hidden. Returns how many values were removed.
 */
export function pruneVault(vaultDir: string, olderThanMs: number, now = Date.now()): number {
  if (!(Number.isFinite(olderThanMs) && olderThanMs >= 0))
    throw new UsageError("the retention must be a non-negative number of milliseconds");
  let removed = 0;
  if (!existsSync(vaultDir)) return 0;
  for (const name of readdirSync(vaultDir)) {
    if (!name.endsWith(".jsonl")) continue;
    const file = join(vaultDir, name);
    let changed = false;
    const lines = readVaultLines(file).map(({ line, number }) => {
      const stored = parseSealed(`the vault file ${file}`, line, number);
      if (isSealedVaultEntry(stored) && now - stored.at > olderThanMs) {
        changed = true;
        removed++;
        const { sealed: _sealed, ...rest } = stored;
        return JSON.stringify({ ...rest, gone: "expired" });
      }
      return line;
    });
    if (changed) rewrite(file, lines);
  }
  return removed;
}
