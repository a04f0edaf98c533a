/** The part of a better-sqlite3 `Database` the store uses (so these types need no `@types` package). */
export interface SqliteDatabase {
  readonly name: string;
  readonly open: boolean;
  prepare(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  exec(source: string): unknown;
  transaction(fn: (...args: never[]) => unknown): unknown;
  close(): unknown;
}
