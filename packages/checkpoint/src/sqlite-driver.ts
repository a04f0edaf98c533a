import type BetterSqlite3 from "better-sqlite3";
import { MissingDriverError } from "./store-errors.js";

/** The better-sqlite3 constructor. */
export type SqliteDriver = typeof BetterSqlite3;

/**
 * Loads better-sqlite3, an optional peer dependency, on first use, and says what to install
 * when it is missing or its native binding cannot load.
 */
export async function loadSqliteDriver(
  importer: () => Promise<unknown> = () => import("better-sqlite3"),
): Promise<SqliteDriver> {
  let loaded: unknown;
  try {
    loaded = await importer();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException)?.code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new MissingDriverError(
        "[checkpoint] sqliteEventStore needs better-sqlite3: pnpm add better-sqlite3@12",
        { cause: error },
      );
    }
    throw new MissingDriverError(
      `[checkpoint] sqliteEventStore could not load better-sqlite3 (${(error as Error)?.message ?? String(error)}): its native binding may not be built for this Node.js; run pnpm rebuild better-sqlite3`,
      { cause: error },
    );
  }
  const driver = (loaded as { default?: unknown }).default ?? loaded;
  if (typeof driver !== "function") {
    throw new MissingDriverError(
      "[checkpoint] sqliteEventStore: the better-sqlite3 module has no Database constructor; install better-sqlite3@12",
    );
  }
  return driver as SqliteDriver;
}
