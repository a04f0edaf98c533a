/**
 * The D1 store's tables (created on first use, `IF NOT EXISTS`): one row per event part, one
 * summary per run with the columns `list` filters and orders on, and one lease per resumed run.
 */
export const d1Schema: readonly string[] = [
  "CREATE TABLE IF NOT EXISTS loopguard_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, part INTEGER NOT NULL, at INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq, part)) WITHOUT ROWID",
  "CREATE TABLE IF NOT EXISTS loopguard_runs (run_id TEXT PRIMARY KEY, agent_id TEXT, status TEXT NOT NULL, updated_at INTEGER NOT NULL, summary TEXT NOT NULL) WITHOUT ROWID",
  "CREATE INDEX IF NOT EXISTS loopguard_runs_updated ON loopguard_runs (updated_at, run_id)",
  // list({ parentRunId }) and list({ rootRunId }): the summary's tree fields, indexed on the
  // expressions listQuery filters on (partial: only child runs have them).
  `CREATE INDEX IF NOT EXISTS loopguard_runs_by_parent ON loopguard_runs (${treeField("parentRunId")}, updated_at, run_id) WHERE ${treeField("parentRunId")} IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS loopguard_runs_by_root ON loopguard_runs (${treeField("rootRunId")}, updated_at, run_id) WHERE ${treeField("rootRunId")} IS NOT NULL`,
  "CREATE TABLE IF NOT EXISTS loopguard_leases (run_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID",
];

/**
 * The SQL expression of a tree field of a run's summary (JSON text), exactly as the tree
 * indexes hold it: `listQuery` filters on this expression so SQLite can use them.
 */
export function treeField(field: "parentRunId" | "rootRunId"): string {
  return `json_extract(summary, '$.${field}')`;
}
