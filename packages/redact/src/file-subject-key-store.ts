import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { RedactOptionsError, VaultDataError } from "./redact-error.js";
import type { SubjectKeyRecord, SubjectKeyStore } from "./subject-keys.js";

/**
 * Keeps subjects' wrapped keys in one JSON file (0600), rewritten atomically (temporary file,
 * fsync, rename) on every change, so a deleted key is gone from the file as soon as `delete`
 * returns. Synchronous, so a vault can tokenise inside a synchronous call.
 *
 * How it fails: a damaged file is a `VaultDataError` naming it.
 *
 * @example
 * import { fileSubjectKeyStore } from "@loopguard/redact/node";
 * const store = fileSubjectKeyStore({ path: ".loopguard/vault/subject-keys.json" });
 */
export function fileSubjectKeyStore(options: { path: string }): SubjectKeyStore & {
  get(subject: string): SubjectKeyRecord | undefined;
  put(record: SubjectKeyRecord): void;
  delete(subject: string): boolean;
  list(): SubjectKeyRecord[];
} {
  if (typeof options?.path !== "string" || options.path === "")
    throw new RedactOptionsError("[redact] fileSubjectKeyStore needs { path } of its JSON file.");
  const { path } = options;
  const read = (): Record<string, SubjectKeyRecord> => {
    if (!existsSync(path)) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      throw new VaultDataError(
        `[redact] the subject key file ${path} is damaged (${(error as Error).message}); restore it from a backup: without it no sealed value can be revealed.`,
        { cause: error },
      );
    }
    const keys = (parsed as { keys?: unknown })?.keys;
    if (typeof keys !== "object" || keys === null)
      throw new VaultDataError(
        `[redact] the subject key file ${path} has no "keys" object; restore it from a backup.`,
      );
    return keys as Record<string, SubjectKeyRecord>;
  };
  const write = (keys: Record<string, SubjectKeyRecord>) => {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const temporary = `${path}.${process.pid}.tmp`;
    const fd = openSync(temporary, "w", 0o600);
    try {
      writeSync(fd, `${JSON.stringify({ version: 1, keys }, null, 1)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  };
  return {
    name: `file:${path}`,
    get: (subject) => read()[subject],
    put(record) {
      const keys = read();
      keys[record.subject] = record;
      write(keys);
    },
    delete(subject) {
      const keys = read();
      if (!Object.hasOwn(keys, subject)) return false;
      delete keys[subject];
      write(keys);
      return true;
    },
    list: () => Object.values(read()),
  };
}
