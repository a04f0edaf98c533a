/**
 * The part of Cloudflare's `D1Database` binding the store uses (structurally, so no type
 * package is needed): prepared statements with bound values, and `batch`, which D1 runs as one
 * transaction (all statements or none).
 */
export interface D1Database {
  prepare(query: string): D1PreparedStatement;
  batch(statements: D1PreparedStatement[]): Promise<Array<D1Result<unknown>>>;
}

/** A prepared D1 statement. */
export interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  run(): Promise<D1Result<unknown>>;
  all<T = Record<string, unknown>>(): Promise<D1Result<T>>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
}

/** What D1 returns for a statement. */
export interface D1Result<T> {
  results?: T[];
  success: boolean;
  meta?: { changes?: number };
}
