/**
 * Where the PostgreSQL integration tests find their database: `DATABASE_URL`
 * (`eval "$(scripts/postgres.sh start)"` sets it). Under CI a missing DATABASE_URL fails the
 * suite; locally the suite is skipped with a loud message.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const databaseUrl = process.env.DATABASE_URL;

if (!databaseUrl) {
  if (process.env.CI) {
    throw new Error(
      '[checkpoint tests] DATABASE_URL is not set under CI: start PostgreSQL with `eval "$(scripts/postgres.sh start)"` before the tests',
    );
  }
  console.warn(
    '\n[checkpoint tests] !!! DATABASE_URL is not set: the PostgreSQL integration tests are SKIPPED. Run `eval "$(scripts/postgres.sh start)"` to run them. !!!\n',
  );
}

/** A fresh schema name for one test file, so files can run in parallel. */
export function freshSchema(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString("hex")}`;
}

/** Drops a test schema and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  if (!databaseUrl) return;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
