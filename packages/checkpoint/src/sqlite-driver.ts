import type BetterSqlite3 from "better-sqlite3";
import { MissingPeerError, missingPeerError } from "./missing-peer-error.js";

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
    throw missingPeerError("better-sqlite3", "sqliteEventStore", error, {
      install: "better-sqlite3@12",
      fix: "its native binding may not be built for this Node.js; run npm rebuild better-sqlite3",
    });
  }
  const driver = (loaded as { default?: unknown }).default ?? loaded;
  if (typeof driver !== "function") {
    throw new MissingPeerError("better-sqlite3", "sqliteEventStore", {
      install: "better-sqlite3@12",
      loadError: "the module has no Database constructor",
    });
  }
  return driver as SqliteDriver;
}
