/**
 * The D1 store's tables (created on first use, `IF NOT EXISTS`): one row per event part, one
 * summary per run with the columns `list` filters and orders on, and one lease per resumed run.
 */
export const d1Schema: readonly string[] = [
  "CREATE TABLE IF NOT EXISTS loopguard_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, part INTEGER NOT NULL, at INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq, part)) WITHOUT ROWID",
  "CREATE TABLE IF NOT EXISTS loopguard_runs (run_id TEXT PRIMARY KEY, agent_id TEXT, status TEXT NOT NULL, updated_at INTEGER NOT NULL, summary TEXT NOT NULL) WITHOUT ROWID",
  "CREATE INDEX IF NOT EXISTS loopguard_runs_updated ON loopguard_runs (updated_at, run_id)",
  "CREATE TABLE IF NOT EXISTS loopguard_leases (run_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID",
];
