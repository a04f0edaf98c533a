/**
 * The schema of the PostgreSQL store, as numbered migrations. Each runs once per schema,
 * recorded in `<schema>.migrations`, under a transaction-scoped advisory lock so that many
 * workers starting at once migrate exactly once.
 */
import { PostgresStoreError } from "./postgres-errors.js";
import { inTransaction, type PgPool } from "./postgres-pool.js";

/** One migration: a version, a name, and the statements it runs. */
interface Migration {
  version: number;
  name: string;
  statements: (schema: string) => string[];
}

const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "runs, events, freeze",
    statements: (s) => [
      // One row per run: its fencing epoch, the length of its log and its summary for `list`.
      `CREATE TABLE ${s}.runs (
        run_id text PRIMARY KEY,
        epoch bigint NOT NULL DEFAULT 0,
        next_seq integer NOT NULL DEFAULT 0,
        status text,
        agent_id text,
        created_at bigint,
        updated_at bigint,
        summary text
      )`,
      `CREATE INDEX runs_updated_idx ON ${s}.runs (updated_at DESC, run_id) WHERE summary IS NOT NULL`,
      `CREATE INDEX runs_status_idx ON ${s}.runs (status, updated_at DESC) WHERE summary IS NOT NULL`,
      // Event bodies are JSON text, not jsonb: jsonb refuses \u0000 and rewrites numbers and keys.
      `CREATE TABLE ${s}.events (
        run_id text NOT NULL,
        seq integer NOT NULL,
        epoch bigint NOT NULL,
        at bigint NOT NULL,
        type text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (run_id, seq)
      )`,
      `CREATE TABLE ${s}.freeze (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        frozen boolean NOT NULL,
        reason text,
        frozen_by text,
        at bigint NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: "hash chain",
    statements: (s) => [
      // Each event's link in the run's hash chain, and the run's last link (its head).
      `ALTER TABLE ${s}.events ADD COLUMN chain text`,
      `ALTER TABLE ${s}.runs ADD COLUMN head text`,
    ],
  },
  {
    version: 3,
    name: "tree columns",
    statements: (s) => [
      // list({ parentRunId }) and list({ rootRunId }): a child run's place in its tree (from its
      // summary, set by every append), indexed; partial, so the indexes hold child runs only.
      `ALTER TABLE ${s}.runs ADD COLUMN parent_run_id text, ADD COLUMN root_run_id text`,
      // Runs written before: read from their summaries (JSON text). The json cast refuses an
      // escaped NUL anywhere in the text (a task may hold one), so it is replaced first by a
      // space escape, which keeps the JSON valid and cannot touch a run id.
      `UPDATE ${s}.runs SET parent_run_id = replace(summary, '\\u0000', '\\u0020')::json ->> 'parentRunId',
         root_run_id = replace(summary, '\\u0000', '\\u0020')::json ->> 'rootRunId'
       WHERE summary LIKE '%"parentRunId"%'`,
      `CREATE INDEX runs_parent_idx ON ${s}.runs (parent_run_id, updated_at DESC, run_id) WHERE parent_run_id IS NOT NULL`,
      `CREATE INDEX runs_root_idx ON ${s}.runs (root_run_id, updated_at DESC, run_id) WHERE root_run_id IS NOT NULL`,
    ],
  },
];

/** The newest schema version this package knows. */
export const latestSchemaVersion = migrations.at(-1)!.version;

/**
 * Creates the schema and applies pending migrations. Safe to call from many processes at
 * once: they queue on an advisory lock keyed by the schema name.
 */
export async function migrate(pool: PgPool, schema: string, quoted: string): Promise<number> {
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `loopguard:migrate:${schema}`,
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query(
      `SELECT coalesce(max(version), 0) AS version FROM ${quoted}.migrations`,
    );
    const current = Number(rows[0]?.version ?? 0);
    if (current > latestSchemaVersion) {
      throw new PostgresStoreError(
        `[checkpoint] schema ${schema} is at version ${current}, newer than this @loopguard/checkpoint knows (${latestSchemaVersion}); upgrade the package in every process that uses this database`,
      );
    }
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      for (const statement of migration.statements(quoted)) await client.query(statement);
      await client.query(`INSERT INTO ${quoted}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    return latestSchemaVersion;
  });
}
