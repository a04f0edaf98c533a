import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ListFilter } from "./contracts/event-store.js";
import { InvalidArgumentError } from "./errors.js";
import { validateListFilter } from "./validate-list-filter.js";

/** The error a filter gets, or undefined when it passes. */
function errorOf(filter: unknown): unknown {
  try {
    validateListFilter(filter as ListFilter, "my-store");
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("validateListFilter", () => {
  it("passes every well-formed filter", () => {
    const cursor = fc.record({
      updatedAt: fc.double({ noNaN: true, noDefaultInfinity: true }),
      runId: fc.string(),
    });
    const filter = fc.record(
      {
        status: fc.oneof(fc.string(), fc.array(fc.string())),
        agentId: fc.string(),
        parentRunId: fc.string(),
        rootRunId: fc.string(),
        updatedAfter: fc.double({ noNaN: true }),
        limit: fc.nat(),
        order: fc.constantFrom("newest" as const, "oldest" as const),
        after: cursor,
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(filter, (value) => errorOf(value) === undefined));
  });

  it.each([
    [null, "filter must be an object"],
    ["running", "filter must be an object"],
    [{ status: 3 }, "status must be a status or an array of statuses"],
    [{ status: ["running", 3] }, "status must be a status or an array of statuses"],
    [{ agentId: 7 }, "agentId must be a string"],
    [{ parentRunId: 7 }, "parentRunId must be a run id (a string)"],
    [{ rootRunId: null }, "rootRunId must be a run id (a string)"],
    [{ updatedAfter: "2026-12-01" }, "updatedAfter must be a time in milliseconds since the epoch"],
    [{ updatedAfter: Number.NaN }, "updatedAfter must be a time in milliseconds since the epoch"],
    [{ order: "asc" }, 'order must be "newest" or "oldest", got "asc"'],
    [{ after: "run-1" }, "after must be the last row of the previous page"],
    [{ after: null }, "after must be the last row of the previous page"],
    [{ after: { updatedAt: 1 } }, "after must be the last row of the previous page"],
    [{ after: { updatedAt: Number.POSITIVE_INFINITY, runId: "r" } }, "after must be the last row"],
    [{ limit: -1 }, "limit must be a non-negative integer"],
    [{ limit: 1.5 }, "limit must be a non-negative integer"],
    [{ limit: 2 ** 53 }, "limit must be a non-negative integer"],
  ])("refuses %j, naming the store and the field", (filter, message) => {
    const error = errorOf(filter);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message.startsWith(`[my-store] list(filter): ${message}`)).toBe(true);
  });
});
