import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { randomBytes } from "./aes-gcm.js";
import { RedactOptionsError, VaultKeyError } from "./redact-error.js";
import { generateVaultKey, type KeyProvider, localProvider, parseKeys } from "./vault-keys.js";

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
 * import { fileKeyProvider } from "@loopguard/redact/node";
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
    const temporary = `${path}.${process.pid}.${Array.from(randomBytes(4), (byte) => byte.toString(16).padStart(2, "0")).join("")}.tmp`;
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
