import type { ListFilter } from "@loopguard/core";
import { validateListFilter } from "@loopguard/core/plugin";
import { treeField } from "./d1-schema.js";

/**
 * The SELECT over `loopguard_runs` for a `list` filter, checked first (core's
 * `validateListFilter`): each filter field must be what `ListFilter` says, or an `[cloudflare]`
 * error names it. The caller re-sorts with core's `filterSummaries`, so ties order the same way
 * in every store.
 */
export function listQuery(filter: ListFilter): { sql: string; values: Array<string | number> } {
  validateListFilter(filter, "cloudflare");
  const { status, agentId, parentRunId, rootRunId, updatedAfter, limit, order, after } = filter;
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
  if (parentRunId !== undefined) {
    clauses.push(`${treeField("parentRunId")} = ?`);
    values.push(parentRunId);
  }
  if (rootRunId !== undefined) {
    clauses.push(`${treeField("rootRunId")} = ?`);
    values.push(rootRunId);
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
