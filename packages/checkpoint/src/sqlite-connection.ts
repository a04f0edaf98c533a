import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import type { SqliteDatabase } from "./sqlite-database.js";
import { loadSqliteDriver } from "./sqlite-driver.js";

const schema = `
CREATE TABLE IF NOT EXISTS loopguard_events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at REAL NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS loopguard_runs (
  run_id TEXT PRIMARY KEY,
  agent_id TEXT,
  status TEXT NOT NULL,
  updated_at REAL NOT NULL,
  summary TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS loopguard_runs_by_update ON loopguard_runs (updated_at DESC, run_id);
-- list({ parentRunId }) and list({ rootRunId }): the tree fields of the summary, indexed on the
-- expression list() queries (only child runs have them, so the indexes hold child runs only).
CREATE INDEX IF NOT EXISTS loopguard_runs_by_parent ON loopguard_runs (json_extract(summary, '$.parentRunId'), updated_at, run_id)
  WHERE json_extract(summary, '$.parentRunId') IS NOT NULL;
CREATE INDEX IF NOT EXISTS loopguard_runs_by_root ON loopguard_runs (json_extract(summary, '$.rootRunId'), updated_at, run_id)
  WHERE json_extract(summary, '$.rootRunId') IS NOT NULL;
CREATE TABLE IF NOT EXISTS loopguard_leases (
  run_id TEXT PRIMARY KEY,
  holder TEXT NOT NULL
) WITHOUT ROWID;
`;

/** An open, migrated SQLite connection of the store. */
export interface SqliteConnection {
  db: BetterSqlite3.Database;
  /** Whether the store opened it (and closes it on `close`). */
  ownsDatabase: boolean;
  /** The database's name, for messages. */
  where: string;
}

/**
 * Opens the store's database (a file, created with its directory when missing, or the
 * better-sqlite3 database given), in WAL mode with `synchronous=FULL`, and creates or migrates
 * its tables. Rejects with `MissingPeerError` when better-sqlite3 is not installed, or with
 * SQLite's error (a database it opened is closed again).
 */
export async function openSqliteConnection(
  source: { path: string } | { database: SqliteDatabase },
  busyTimeoutMs: number,
): Promise<SqliteConnection> {
  let db: BetterSqlite3.Database;
  let ownsDatabase = false;
  if ("database" in source) {
    db = source.database as unknown as BetterSqlite3.Database;
  } else {
    const Database = await loadSqliteDriver();
    const path = source.path;
    const file = path === ":memory:" ? path : resolve(path);
    if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
    db = new Database(file);
    ownsDatabase = true;
  }
  const where = db.name;
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec(schema);
    // The hash chain's columns, added to databases made before them.
    for (const [table, column] of [
      ["loopguard_events", "chain"],
      ["loopguard_runs", "head"],
    ] as const) {
      const columns = db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>;
      if (columns.some((row) => row.name === column)) continue;
      try {
        db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT`);
      } catch (error) {
        // Another connection added it meanwhile.
        if (!/duplicate column/i.test((error as Error).message)) throw error;
      }
    }
  } catch (error) {
    if (ownsDatabase) db.close();
    throw error;
  }
  return { db, ownsDatabase, where };
}
