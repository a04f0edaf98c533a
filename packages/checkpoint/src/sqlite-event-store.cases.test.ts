import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StoredEventInput } from "@loopguard/core";
import { rejectedError } from "@loopguard/core/testing";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { MissingDriverError, MissingPeerError } from "./index.js";
import { loadSqliteDriver } from "./sqlite-driver.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

const start = (runId: string): StoredEventInput => ({
  type: "run-start",
  runId,
  agentId: "support",
  task: "refund A1001",
  model: "claude-sonnet-5-5",
  maxTokens: 1024,
  budget: {},
  policyDigest: "p",
  toolDigest: "t",
  at: 1,
});
const rejection = rejectedError;

describe("sqliteEventStore", () => {
  it("says what to install when better-sqlite3 is missing, or cannot load", async () => {
    const missing = Object.assign(new Error("Cannot find package 'better-sqlite3'"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    const error = await rejection(loadSqliteDriver(() => Promise.reject(missing)));
    expect(error.code).toBe("missing_peer");
    expect(error.message).toBe(
      "[checkpoint] sqliteEventStore needs the better-sqlite3 package, which is not installed: run npm install better-sqlite3@12",
    );
    // One class under two names: the SQLite driver's error is the peer error of pg and pg-boss.
    expect(MissingDriverError).toBe(MissingPeerError);
    expect(error).toBeInstanceOf(MissingPeerError);
    expect(MissingDriverError.isInstance(error)).toBe(true);
    expect((error as MissingPeerError).peer).toBe("better-sqlite3");
    expect(error.cause).toBe(missing);
    const broken = await rejection(
      loadSqliteDriver(() => Promise.reject(new Error("Could not locate the bindings file"))),
    );
    expect(broken.code).toBe("missing_peer");
    expect(broken.message).toMatch(
      /could not load better-sqlite3 \(Could not locate the bindings file\).*npm rebuild better-sqlite3/,
    );
    const empty = await rejection(loadSqliteDriver(() => Promise.resolve({ default: 42 })));
    expect(empty.message).toMatch(
      /could not load better-sqlite3 \(the module has no Database constructor\)/,
    );
    expect(typeof (await loadSqliteDriver())).toBe("function");
  });

  it("rejects bad options with clear errors", () => {
    expect(() => sqliteEventStore({} as never)).toThrow(/exactly one of path/);
    expect(() =>
      sqliteEventStore({ path: "a.db", database: new Database(":memory:") } as never),
    ).toThrow(/exactly one of path/);
    expect(() => sqliteEventStore({ path: "" })).toThrow(/path must be a file path/);
    expect(() => sqliteEventStore({ database: {} as never })).toThrow(
      /must be a better-sqlite3 Database/,
    );
    expect(() => sqliteEventStore({ path: "a.db", busyTimeoutMs: -1 })).toThrow(/busyTimeoutMs/);
    expect(() => sqliteEventStore({ path: "a.db", commitThread: "yes" as never })).toThrow(
      /commitThread must be true or false, got yes/,
    );
  });

  it("uses WAL and synchronous=FULL, and leaves a database it did not open open", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "lg-sqlite-cases-")), "nested", "runs.db");
    const database = new Database(join(mkdtempSync(join(tmpdir(), "lg-sqlite-own-")), "own.db"));
    const store = sqliteEventStore({ database });
    await store.append("run_own", [start("run_own")], { expectedSeq: 0 });
    expect(database.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(database.pragma("synchronous", { simple: true })).toBe(2);
    await store.close();
    expect(database.open).toBe(true);
    expect(database.prepare("SELECT COUNT(*) AS n FROM loopguard_events").get()).toEqual({ n: 1 });
    database.close();
    const owned = sqliteEventStore({ path });
    await owned.append("run_owned", [start("run_owned")], { expectedSeq: 0 });
    await owned.close();
    await owned.close();
    expect((await rejection(owned.read("run_owned"))).code).toBe("store_closed");
  });

  it("fences writers on two connections to one file", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "lg-sqlite-fence-")), "runs.db");
    const first = sqliteEventStore({ path });
    const second = sqliteEventStore({ path });
    await first.append("run_fence", [start("run_fence")], { expectedSeq: 0 });
    const settled = await Promise.allSettled([
      first.append("run_fence", [{ type: "run-halt", reason: "a", source: "test", at: 2 }], {
        expectedSeq: 1,
      }),
      second.append("run_fence", [{ type: "run-halt", reason: "b", source: "test", at: 3 }], {
        expectedSeq: 1,
      }),
    ]);
    expect(settled.map((outcome) => outcome.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(await second.read("run_fence")).toHaveLength(2);
    await first.close();
    await second.close();
  });
});
