import { LoopguardError } from "@loopguard/core";
import { describe, expect, it } from "vitest";
import type { D1Database } from "./d1-database.js";
import { d1EventStore } from "./d1-event-store.js";

const fakeBinding = { prepare: () => undefined, batch: async () => [] } as unknown as D1Database;

describe("d1EventStore bad input", () => {
  it.each([
    ["no options", undefined, /database must be a D1 binding/],
    ["not a binding", { database: {} }, /database must be a D1 binding/],
    [
      "partChars 0",
      { database: fakeBinding, partChars: 0 },
      /partChars must be a positive integer/,
    ],
    ["rowsPerStatement 17", { database: fakeBinding, rowsPerStatement: 17 }, /at most 100 values/],
  ])("refuses %s with a [cloudflare] InvalidArgumentError", (_label, options, message) => {
    let error: unknown;
    try {
      d1EventStore(options as never);
    } catch (thrown) {
      error = thrown;
    }
    expect(LoopguardError.isInstance(error)).toBe(true);
    expect((error as LoopguardError).code).toBe("invalid_argument");
    expect((error as Error).message).toMatch(/^\[cloudflare\] /);
    expect((error as Error).message).toMatch(message);
  });

  it("refuses a bad list filter and a bad expectedSeq before touching the database", async () => {
    const store = d1EventStore({ database: fakeBinding });
    await expect(store.append("run_1", [], { expectedSeq: -1 })).rejects.toThrow(
      /^\[cloudflare\] append: expectedSeq must be a non-negative integer/,
    );
    await expect(store.list({ order: "sideways" as never })).rejects.toThrow(
      /^\[cloudflare\] list\(filter\): order must be/,
    );
  });
});
