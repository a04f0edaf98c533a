/**
 * The error for an optional peer dependency of `@loopguard/checkpoint` (`better-sqlite3`, `pg`,
 * `pg-boss`) that is not installed or cannot load.
 */
import { LoopguardError } from "@loopguard/core";

/** Options of {@link MissingPeerError}. */
export interface MissingPeerErrorOptions {
  cause?: unknown;
  /** What to pass to `npm install` (e.g. `better-sqlite3@12`). Default: the package name. */
  install?: string;
  /** Why an installed package could not load; without it, the package is missing. */
  loadError?: string;
  /** What to do when it could not load. Default: reinstall it. */
  fix?: string;
}

/**
 * An optional peer dependency (`better-sqlite3`, `pg`, `pg-boss`) is not installed, or is
 * installed but cannot load (e.g. a native binding built for another Node.js). Code
 * `missing_peer`; `peer` names the package, and the message says what to install or run.
 * `MissingDriverError` is the same class under its earlier name.
 */
export class MissingPeerError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.MissingPeerError";
  /** The package at fault, e.g. `pg`. */
  readonly peer: string;
  constructor(peer: string, what: string, options: MissingPeerErrorOptions = {}) {
    const install = options.install ?? peer;
    super(
      "missing_peer",
      options.loadError === undefined
        ? `[checkpoint] ${what} needs the ${peer} package, which is not installed: run npm install ${install}`
        : `[checkpoint] ${what} could not load ${peer} (${options.loadError}): ${options.fix ?? `reinstall it with npm install ${install}`}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.peer = peer;
  }
}

/**
 * The SQLite driver is missing: the same class as {@link MissingPeerError} (one class, code
 * `missing_peer`), kept under the name earlier releases exported.
 */
export const MissingDriverError = MissingPeerError;
/** The SQLite driver is missing: the same class as {@link MissingPeerError}. */
export type MissingDriverError = MissingPeerError;

/**
 * The `MissingPeerError` for a failed `import(peer)`: missing when the module is not found,
 * "could not load" (with the reason) otherwise.
 */
export function missingPeerError(
  peer: string,
  what: string,
  error: unknown,
  options: Omit<MissingPeerErrorOptions, "cause" | "loadError"> = {},
): MissingPeerError {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND")
    return new MissingPeerError(peer, what, { ...options, cause: error });
  return new MissingPeerError(peer, what, {
    ...options,
    cause: error,
    loadError: error instanceof Error ? error.message : String(error),
  });
}
