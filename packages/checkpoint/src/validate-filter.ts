import type { ListFilter } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";

/** Checks a ListFilter, so a typo is an error rather than an unfiltered list. */
export function validateFilter(filter: ListFilter): void {
  if (typeof filter !== "object" || filter === null)
    throw new InvalidArgumentError("[checkpoint] list(filter): filter must be an object");
  const { status, agentId, updatedAfter, limit, order, after } = filter;
  if (
    status !== undefined &&
    typeof status !== "string" &&
    !(Array.isArray(status) && status.every((item) => typeof item === "string"))
  ) {
    throw new InvalidArgumentError(
      "[checkpoint] list(filter): status must be a status or an array of statuses",
    );
  }
  if (agentId !== undefined && typeof agentId !== "string")
    throw new InvalidArgumentError("[checkpoint] list(filter): agentId must be a string");
  if (
    updatedAfter !== undefined &&
    (typeof updatedAfter !== "number" || Number.isNaN(updatedAfter))
  ) {
    throw new InvalidArgumentError(
      "[checkpoint] list(filter): updatedAfter must be a time in milliseconds since the epoch",
    );
  }
  if (order !== undefined && order !== "newest" && order !== "oldest")
    throw new InvalidArgumentError(
      `[checkpoint] list(filter): order must be "newest" or "oldest", got ${JSON.stringify(order)}`,
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
      "[checkpoint] list(filter): after must be the last row of the previous page, { updatedAt, runId }",
    );
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0))
    throw new InvalidArgumentError(
      "[checkpoint] list(filter): limit must be a non-negative integer",
    );
}
