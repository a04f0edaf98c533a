// Every public factory of @loopguard/checkpoint, fed input it cannot use: each must throw (or
// reject with) a loopguard error whose message starts with `[checkpoint]`, names the entry point
// and says what to pass instead. None of these cases needs a database: options are checked
// before any connection is opened.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { thrownError as thrown } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import {
  approveQueuedRun,
  createWorker,
  jsonlEventStore,
  MissingDriverError,
  MissingPeerError,
  postgresEventStore,
  postgresFreezeStore,
  sqliteEventStore,
  submitRun,
} from "./index.js";
import { missingPeerError } from "./missing-peer-error.js";

// biome-ignore lint/suspicious/noExplicitAny: these tests pass what the types forbid.
const bad = (value: unknown): any => value;

const url = "postgres://localhost:1/none";
const agent = () => bad({});

describe("bad input to every public factory of @loopguard/checkpoint", () => {
  const cases: [string, () => unknown, RegExp][] = [
    [
      "jsonlEventStore: no options",
      () => jsonlEventStore(bad(undefined)),
      /options\.dir must be a directory path/,
    ],
    [
      "jsonlEventStore: dir a number",
      () => jsonlEventStore(bad({ dir: 1 })),
      /options\.dir must be/,
    ],
    [
      "jsonlEventStore: lockTimeoutMs -1",
      () => jsonlEventStore({ dir: "x", lockTimeoutMs: -1 }),
      /lockTimeoutMs must be/,
    ],
    [
      "jsonlEventStore: lockIdleMs NaN",
      () => jsonlEventStore({ dir: "x", lockIdleMs: Number.NaN }),
      /lockIdleMs must be/,
    ],
    [
      "jsonlEventStore: summaryIntervalMs text",
      () => jsonlEventStore({ dir: "x", summaryIntervalMs: bad("1s") }),
      /summaryIntervalMs must be/,
    ],
    ["sqliteEventStore: no options", () => sqliteEventStore(bad(undefined)), /pass \{ path/],
    [
      "sqliteEventStore: path and database",
      () => sqliteEventStore(bad({ path: "a.db", database: {} })),
      /exactly one of path/,
    ],
    [
      "sqliteEventStore: database {}",
      () => sqliteEventStore(bad({ database: {} })),
      /better-sqlite3 Database/,
    ],
    [
      "sqliteEventStore: busyTimeoutMs -1",
      () => sqliteEventStore({ path: ":memory:", busyTimeoutMs: -1 }),
      /busyTimeoutMs/,
    ],
    [
      "postgresEventStore: no options",
      () => postgresEventStore(bad(undefined)),
      /pool or a connectionString/,
    ],
    [
      "postgresEventStore: pool and string",
      () => postgresEventStore(bad({ pool: {}, connectionString: url })),
      /exactly one of pool/,
    ],
    [
      "postgresEventStore: pool {}",
      () => postgresEventStore(bad({ pool: {} })),
      /pool must be a pg\.Pool/,
    ],
    [
      "postgresEventStore: mysql URL",
      () => postgresEventStore({ connectionString: "mysql://x" }),
      /postgres:\/\//,
    ],
    [
      "postgresEventStore: max 0",
      () => postgresEventStore({ connectionString: url, max: 0 }),
      /max must be a positive integer/,
    ],
    [
      "postgresEventStore: schema with a quote",
      () => postgresEventStore({ connectionString: url, schema: 'a"b' }),
      /not a valid schema name/,
    ],
    [
      "postgresEventStore: schema pg_",
      () => postgresEventStore({ connectionString: url, schema: "pg_x" }),
      /not "pg_"/,
    ],
    [
      "postgresEventStore: onError a string",
      () => postgresEventStore({ connectionString: url, onError: bad("log") }),
      /^\[checkpoint\] postgresEventStore: onError must be a function/,
    ],
    [
      "postgresFreezeStore: no options",
      () => postgresFreezeStore(bad(undefined)),
      /^\[checkpoint\] postgresFreezeStore/,
    ],
    [
      "createWorker: no options",
      () => createWorker(bad(undefined)),
      /^\[checkpoint\] createWorker\(options\)/,
    ],
    [
      "createWorker: agent an object",
      () => createWorker(bad({ connectionString: url, agent: {} })),
      /agent must be a function/,
    ],
    ["createWorker: no store", () => createWorker({ agent }), /exactly one of store/],
    [
      "createWorker: store a jsonl store",
      () => createWorker({ agent, store: bad(jsonlEventStore({ dir: "x" })) }),
      /store must be a postgresEventStore/,
    ],
    [
      "createWorker: concurrency 0",
      () => createWorker({ agent, connectionString: url, concurrency: 0 }),
      /concurrency must be an integer of at least 1/,
    ],
    [
      "createWorker: pollingIntervalMs 10",
      () => createWorker({ agent, connectionString: url, pollingIntervalMs: 10 }),
      /at least 500/,
    ],
    [
      "createWorker: leaseMs 1500",
      () => createWorker({ agent, connectionString: url, leaseMs: 1500 }),
      /whole number of seconds/,
    ],
    [
      "createWorker: sliceMs past half the lease",
      () => createWorker({ agent, connectionString: url, sliceMs: 20_000 }),
      /at most half of leaseMs/,
    ],
    [
      "createWorker: queue with a space",
      () => createWorker({ agent, connectionString: url, queue: "my runs" }),
      /queue "my runs"/,
    ],
    [
      "createWorker: retryLimit -1",
      () => createWorker({ agent, connectionString: url, retryLimit: -1 }),
      /retryLimit/,
    ],
    [
      "createWorker: onError a string",
      () => createWorker({ agent, connectionString: url, onError: bad("console") }),
      /^\[checkpoint\] createWorker: onError must be a function/,
    ],
    [
      "createWorker: onSlice a string",
      () => createWorker({ agent, connectionString: url, onSlice: bad("log") }),
      /^\[checkpoint\] createWorker: onSlice must be a function/,
    ],
    [
      "createWorker: a schema other than its store's",
      () =>
        createWorker({
          agent,
          store: postgresEventStore({ connectionString: url, schema: "one" }),
          schema: "two",
        }),
      /schema "two" differs from the store's schema "one"/,
    ],
    [
      "createWorker: maxBackoffMs below the polling interval",
      () => createWorker({ agent, connectionString: url, maxBackoffMs: 100 }),
      /maxBackoffMs must be an integer of at least 2000/,
    ],
    [
      "createWorker: onStatus a string",
      () => createWorker({ agent, connectionString: url, onStatus: bad("log") }),
      /^\[checkpoint\] createWorker: onStatus must be a function/,
    ],
    [
      "createWorker: empty id",
      () => createWorker({ agent, connectionString: url, id: "" }),
      /^\[checkpoint\] createWorker: id must be a non-empty string/,
    ],
  ];

  for (const [name, make, message] of cases) {
    it(name, () => {
      const error = thrown(make);
      expect(error.message).toMatch(/^\[checkpoint\] /);
      expect(error.message).toMatch(message);
    });
  }

  it("submitRun and approveQueuedRun reject bad input before they touch a queue", async () => {
    await expect(submitRun({ connectionString: url }, "")).rejects.toThrow(
      /^\[checkpoint\] submitRun\(target, task\): task must be a non-empty string/,
    );
    await expect(submitRun(bad(null), "refund A1001")).rejects.toThrow(
      /^\[checkpoint\] submitRun\(target, \.\.\.\): target must be/,
    );
    await expect(submitRun(bad({}), "refund A1001")).rejects.toThrow(/pass boss/);
    await expect(
      submitRun({ connectionString: url }, "refund A1001", { runId: "../etc/passwd" }),
    ).rejects.toThrow(/^\[checkpoint\] /);
    await expect(
      approveQueuedRun({ connectionString: url }, "run_1", { decision: "approve" }, bad({})),
    ).rejects.toThrow(/options\.agent must be the agent factory/);
    await expect(
      approveQueuedRun(bad({ boss: {} }), "run_1", { decision: "approve" }, { agent }),
    ).rejects.toThrow(/the answer is written to the run's log/);
  });

  it("append and list check their arguments", async () => {
    const store = jsonlEventStore({ dir: mkdtempSync(join(tmpdir(), "lg-bad-input-")) });
    try {
      await expect(store.append("run_1", bad("events"), { expectedSeq: 0 })).rejects.toThrow(
        /^\[checkpoint\] append to run run_1: events must be an array/,
      );
      await expect(store.append("run_1", [], { expectedSeq: -1 })).rejects.toThrow(
        /expectedSeq must be the log's length/,
      );
      await expect(store.append("../x", [], { expectedSeq: 0 })).rejects.toThrow(
        /^\[checkpoint\] /,
      );
      await expect(store.list(bad({ limit: -1 }))).rejects.toThrow(
        /^\[checkpoint\] list\(filter\): limit must be a non-negative integer/,
      );
    } finally {
      await store.close();
    }
  });

  it("a missing or broken peer is one error class under two names", () => {
    const notFound = Object.assign(new Error("Cannot find package 'pg'"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    const missing = missingPeerError("pg", "postgresEventStore", notFound);
    expect(missing).toBeInstanceOf(MissingDriverError);
    expect(MissingPeerError.isInstance(missing)).toBe(true);
    expect(missing.code).toBe("missing_peer");
    expect(missing.peer).toBe("pg");
    expect(missing.message).toBe(
      "[checkpoint] postgresEventStore needs the pg package, which is not installed: run npm install pg",
    );
    const broken = missingPeerError("pg-boss", "createWorker", new SyntaxError("Unexpected token"));
    expect(broken.message).toBe(
      "[checkpoint] createWorker could not load pg-boss (Unexpected token): reinstall it with npm install pg-boss",
    );
  });
});
