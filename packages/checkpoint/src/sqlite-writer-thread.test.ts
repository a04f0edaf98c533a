import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AppendResult, StoredEventInput } from "@loopguard/core";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { chainSettings } from "./hash-chain.js";
import { encodeEventBody } from "./jsonl-log.js";
import type { PendingAppend } from "./sqlite-appender.js";
import { openSqliteConnection } from "./sqlite-connection.js";
import { sqliteEventStore } from "./sqlite-event-store.js";
import { SqliteThreadedCommit } from "./sqlite-threaded-commit.js";
import { SqliteWriterThread } from "./sqlite-writer-thread.js";
import { StoreWriteError } from "./store-errors.js";

const halt = (at: number): StoredEventInput => ({
  type: "run-halt",
  reason: "test",
  source: "test",
  at,
});

/** A connection, a writer thread on the same file, and a way to queue appends through both. */
async function setUp(driver?: string) {
  const path = join(mkdtempSync(join(tmpdir(), "lg-sqlite-thread-")), "runs.db");
  const connection = await openSqliteConnection({ path }, 5_000);
  const thread = new SqliteWriterThread(connection.db.name, connection.where, 5_000, driver);
  const commits = new SqliteThreadedCommit(
    connection,
    chainSettings({ hashChain: true }, "test"),
    thread,
  );
  const append = (runId: string, expectedSeq: number, count = 1) => {
    const events = Array.from({ length: count }, (_, index) => halt(index + 1));
    return new Promise<AppendResult>((resolve, reject) => {
      const pending: PendingAppend = {
        runId,
        expectedSeq,
        events,
        bodies: events.map((event, index) => encodeEventBody(event, runId, index)),
        resolve,
        reject,
      };
      commits.enqueue(pending);
    });
  };
  return { path, connection, thread, commits, append };
}

describe("the SQLite writer thread", () => {
  it("commits batches off the main thread, fenced, and readable from another connection", async () => {
    const { path, connection, thread, append } = await setUp();
    const results = await Promise.allSettled([
      append("run_a", 0, 2),
      append("run_a", 2),
      append("run_b", 0),
      append("run_b", 0),
    ]);
    expect(results.map((result) => result.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "rejected",
    ]);
    expect((results[1] as PromiseFulfilledResult<AppendResult>).value).toEqual({ nextSeq: 3 });
    expect((results[3] as PromiseRejectedResult).reason.code).toBe("append_conflict");
    await thread.close();
    connection.db.close();
    const store = sqliteEventStore({ path, commitThread: false });
    expect(await store.read("run_a")).toHaveLength(3);
    expect((await store.verify("run_a")).ok).toBe(true);
    expect((await store.list()).map((summary) => [summary.runId, summary.events]).sort()).toEqual([
      ["run_a", 3],
      ["run_b", 1],
    ]);
    await store.close();
  });

  it("rejects pending and later appends with a clear error when the thread dies", async () => {
    const { connection, thread, append } = await setUp();
    await append("run_dies", 0);
    const pending = Array.from({ length: 20 }, (_, index) => append(`run_pending_${index}`, 0));
    await thread.terminate();
    const settled = await Promise.allSettled(pending);
    for (const outcome of settled) {
      expect(outcome.status).toBe("rejected");
      const error = (outcome as PromiseRejectedResult).reason;
      expect(error).toBeInstanceOf(StoreWriteError);
      expect(error.message).toMatch(
        /^\[checkpoint\] the SQLite writer thread of .*runs\.db stopped \(it exited with code 1\): an append it had not confirmed may or may not be in the log/,
      );
    }
    const later = await append("run_dies", 1).catch((error: unknown) => error);
    expect(later).toBeInstanceOf(StoreWriteError);
    expect((later as Error).message).toMatch(/writer thread .* stopped/);
    connection.db.close();
  });

  it("rejects appends with the thread's error when it cannot start", async () => {
    const broken = join(mkdtempSync(join(tmpdir(), "lg-sqlite-driver-")), "driver.cjs");
    writeFileSync(broken, 'throw new Error("the native binding is missing");\n');
    const { connection, thread, append } = await setUp(broken);
    const error = await append("run_never", 0).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreWriteError);
    expect((error as Error).message).toMatch(
      /writer thread of .* stopped \(it threw: the native binding is missing\)/,
    );
    await thread.close();
    connection.db.close();
  });

  it("rejects a batch whose transaction fails, rolled back, naming the cause", async () => {
    const { path, connection, thread, append } = await setUp();
    await append("run_ok", 0);
    // A trigger makes the next insert fail inside the writer's transaction.
    const other = new Database(path);
    other.exec(
      "CREATE TRIGGER refuse BEFORE INSERT ON loopguard_events WHEN NEW.run_id = 'run_refused' BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END",
    );
    other.close();
    const results = await Promise.allSettled([append("run_ok", 1), append("run_refused", 0)]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect((result as PromiseRejectedResult).reason.message).toMatch(
        /^\[checkpoint\] the commit to .*runs\.db failed \(refused by trigger\) and rolled back: none of its appends is in the log/,
      );
    }
    // Nothing of the failed batch is in the log, and the fence continues from the committed length.
    expect(await append("run_ok", 1)).toEqual({ nextSeq: 2 });
    await thread.close();
    connection.db.close();
  });
});
