import { InvalidArgumentError, type ListFilter } from "@loopguard/core";

/**
 * The SELECT over `loopguard_runs` for a `list` filter, checked first: each filter field must
 * be what `ListFilter` says, or an `[cloudflare]` error names it. The caller re-sorts with core's
 * `filterSummaries`, so ties order the same way in every store.
 */
export function listQuery(filter: ListFilter): { sql: string; values: Array<string | number> } {
  if (typeof filter !== "object" || filter === null)
    throw new InvalidArgumentError("[cloudflare] list(filter): filter must be an object");
  const { status, agentId, updatedAfter, limit, order, after } = filter;
  if (
    status !== undefined &&
    typeof status !== "string" &&
    !(Array.isArray(status) && status.every((item) => typeof item === "string"))
  )
    throw new InvalidArgumentError(
      "[cloudflare] list(filter): status must be a status or an array of statuses",
    );
  if (agentId !== undefined && typeof agentId !== "string")
    throw new InvalidArgumentError("[cloudflare] list(filter): agentId must be a string");
  if (
    updatedAfter !== undefined &&
    (typeof updatedAfter !== "number" || Number.isNaN(updatedAfter))
  )
    throw new InvalidArgumentError(
      "[cloudflare] list(filter): updatedAfter must be milliseconds since the epoch",
    );
  if (order !== undefined && order !== "newest" && order !== "oldest")
    throw new InvalidArgumentError(
      `[cloudflare] list(filter): order must be "newest" or "oldest", got ${JSON.stringify(order)}`,
    );
  if (
    after !== undefined &&
    (typeof after !== "object" ||
      after === null ||
      typeof after.runId !== "string" ||
      typeof after.updatedAt !== "number" ||
      !Number.isFinite(after.updatedAt))
  )
    throw new InvalidArgumentError(
      "[cloudflare] list(filter): after must be the last row of the previous page, { updatedAt, runId }",
    );
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0))
    throw new InvalidArgumentError(
      "[cloudflare] list(filter): limit must be a non-negative integer",
    );
  const clauses: string[] = [];
  const values: Array<string | number> = [];
  if (status !== undefined) {
    const statuses = typeof status === "string" ? [status] : [...status];
    clauses.push(statuses.length === 0 ? "0" : `status IN (${statuses.map(() => "?").join(", ")})`);
    values.push(...statuses);
  }
  if (agentId !== undefined) {
    clauses.push("agent_id = ?");
    values.push(agentId);
  }
  if (updatedAfter !== undefined) {
    clauses.push("updated_at > ?");
    values.push(updatedAfter);
  }
  const oldest = order === "oldest";
  if (after !== undefined) {
    clauses.push(`(updated_at ${oldest ? ">" : "<"} ? OR (updated_at = ? AND run_id > ?))`);
    values.push(after.updatedAt, after.updatedAt, after.runId);
  }
  let sql = `SELECT summary FROM loopguard_runs${clauses.length > 0 ? ` WHERE ${clauses.join(" AND ")}` : ""} ORDER BY updated_at ${oldest ? "ASC" : "DESC"}, run_id`;
  if (limit !== undefined) {
    sql += " LIMIT ?";
    values.push(limit);
  }
  return { sql, values };
}
