import type { ListFilter } from "./contracts/event-store.js";
import { InvalidArgumentError } from "./errors.js";

/**
 * Checks a `list` filter against `ListFilter`, so a typo is an error rather than an unfiltered
 * list: each field must be of its type (`status` a string or an array of strings, `agentId` a
 * string, `parentRunId` and `rootRunId` strings, `updatedAfter` a number, `order` `"newest"` or `"oldest"`, `after` a `{ updatedAt,
 * runId }` row, `limit` a non-negative integer). Event stores call it first in `list`; the
 * error (`InvalidArgumentError`) is prefixed with the store's package, e.g. `[checkpoint]`.
 *
 * @example
 * async list(filter: ListFilter = {}) {
 *   validateListFilter(filter, "my-store");
 *   // … read, then filterSummaries(summaries, filter)
 * }
 */
export function validateListFilter(filter: ListFilter, packageName: string): void {
  const where = `[${packageName}] list(filter)`;
  if (typeof filter !== "object" || filter === null)
    throw new InvalidArgumentError(`${where}: filter must be an object`);
  const { status, agentId, parentRunId, rootRunId, updatedAfter, limit, order, after } = filter;
  if (
    status !== undefined &&
    typeof status !== "string" &&
    !(Array.isArray(status) && status.every((item) => typeof item === "string"))
  )
    throw new InvalidArgumentError(`${where}: status must be a status or an array of statuses`);
  if (agentId !== undefined && typeof agentId !== "string")
    throw new InvalidArgumentError(`${where}: agentId must be a string`);
  if (parentRunId !== undefined && typeof parentRunId !== "string")
    throw new InvalidArgumentError(`${where}: parentRunId must be a run id (a string)`);
  if (rootRunId !== undefined && typeof rootRunId !== "string")
    throw new InvalidArgumentError(`${where}: rootRunId must be a run id (a string)`);
  if (
    updatedAfter !== undefined &&
    (typeof updatedAfter !== "number" || Number.isNaN(updatedAfter))
  )
    throw new InvalidArgumentError(
      `${where}: updatedAfter must be a time in milliseconds since the epoch`,
    );
  if (order !== undefined && order !== "newest" && order !== "oldest")
    throw new InvalidArgumentError(
      `${where}: order must be "newest" or "oldest", got ${JSON.stringify(order)}`,
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
      `${where}: after must be the last row of the previous page, { updatedAt, runId }`,
    );
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0))
    throw new InvalidArgumentError(`${where}: limit must be a non-negative integer`);
}
