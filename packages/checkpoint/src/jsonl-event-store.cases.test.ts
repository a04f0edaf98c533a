import { spawnSync } from "node:child_process";
import {
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { open, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import type { StoredEventInput } from "@loopguard/core";
import { AppendConflictError, CorruptLogError, type LoopguardError } from "@loopguard/core";
import { rejectedError, retryEvent } from "@loopguard/core/testing";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { type JsonlEventStore, jsonlEventStore, logFiles } from "./jsonl-event-store.js";

const stores: JsonlEventStore[] = [];
const newStore = (
  options: {
    dir?: string;
    lockTimeoutMs?: number;
    lockIdleMs?: number;
    summaryIntervalMs?: number;
  } = {},
) => {
  const store = jsonlEventStore({
    dir: options.dir ?? mkdtempSync(join(tmpdir(), "lg-jsonl-cases-")),
    ...options,
  });
  stores.push(store);
  return store;
};
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

const start = (runId: string, at = 1): StoredEventInput => ({
  type: "run-start",
  runId,
  agentId: "support",
  task: "refund A1001",
  model: "claude-sonnet-5-5",
  maxTokens: 1024,
  budget: {},
  policyDigest: "p",
  toolDigest: "t",
  at,
});
const retry = (attempt: number, message = `retry ${attempt}`): StoredEventInput =>
  retryEvent(attempt, message, 1000 + attempt);
const rejection = rejectedError;

describe("jsonlEventStore: the file format", () => {
  it("writes one JSON event per line, seq and at first, in <dir>/<runId>.jsonl", async () => {
    const store = newStore();
    await store.append("run_format", [start("run_format"), retry(1, "a\nb\u2028c")], {
      expectedSeq: 0,
    });
    expect(readdirSync(store.dir).filter((name) => name.endsWith(".jsonl"))).toEqual([
      "run_format.jsonl",
    ]);
    const text = readFileSync(store.fileOf("run_format"), "utf8");
    const lines = text.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe("");
    expect(lines[0]!.startsWith('{"seq":0,"at":1,"type":"run-start",')).toBe(true);
    expect(lines[1]!.startsWith('{"seq":1,"at":1001,"type":"model-retry",')).toBe(true);
    expect(JSON.parse(lines[1]!).message).toBe("a\nb\u2028c");
  });

  it("never lets a run id name a path outside its directory", async () => {
    const parent = mkdtempSync(join(tmpdir(), "lg-jsonl-traversal-"));
    const store = newStore({ dir: join(parent, "runs") });
    for (const runId of ["../escape", "..", ".", "a/../../b", "/etc/passwd", "C:\\x", "a\u0000b"]) {
      const error = await rejection(store.append(runId, [start(runId)], { expectedSeq: 0 }));
      expect(error.code, runId).toBe("invalid_argument");
      expect(error.message).toMatch(
        /^\[checkpoint\] jsonlEventStore\.append: run id .* is invalid/,
      );
    }
    expect(readdirSync(parent)).toEqual([]);
  });

  it("rejects bad options, events and expectedSeq with clear errors", async () => {
    expect(() => jsonlEventStore({ dir: "" })).toThrow(/options\.dir must be a directory path/);
    expect(() => jsonlEventStore(undefined as never)).toThrow(
      /\[checkpoint\] jsonlEventStore\(options\)/,
    );
    expect(() => jsonlEventStore({ dir: "x", lockTimeoutMs: -1 })).toThrow(/lockTimeoutMs/);
    const store = newStore();
    expect(
      (await rejection(store.append("run_x", [start("run_x")], { expectedSeq: -1 }))).message,
    ).toMatch(/expectedSeq must be/);
    expect(
      (await rejection(store.append("run_x", [start("run_x")], { expectedSeq: 0.5 }))).code,
    ).toBe("invalid_argument");
    expect(
      (await rejection(store.append("run_x", "nope" as never, { expectedSeq: 0 }))).message,
    ).toMatch(/events must be an array/);
    expect(
      (
        await rejection(
          store.append("run_x", [{ ...start("run_x"), at: Number.NaN }], { expectedSeq: 0 }),
        )
      ).message,
    ).toMatch(/finite number `at`/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(
      (
        await rejection(
          store.append("run_x", [{ ...start("run_x"), context: cyclic } as never], {
            expectedSeq: 0,
          }),
        )
      ).message,
    ).toMatch(/cannot be stored as JSON/);
    expect((await rejection(store.list({ limit: -1 }))).code).toBe("invalid_argument");
    expect((await rejection(store.list({ status: 3 } as never))).code).toBe("invalid_argument");
    expect(existsSync(store.fileOf("run_x"))).toBe(false);
  });

  it("refuses to be used after close, and closing twice is safe", async () => {
    const store = newStore();
    await store.close();
    await store.close();
    expect(
      (await rejection(store.append("run_closed", [start("run_closed")], { expectedSeq: 0 }))).code,
    ).toBe("store_closed");
    expect((await rejection(store.read("run_closed"))).code).toBe("store_closed");
  });
});

describe("jsonlEventStore: torn tails and damage", () => {
  it("cuts a torn tail off at the next append, leaving only complete lines", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-torn-"));
    const first = newStore({ dir });
    await first.append("run_torn", [start("run_torn"), retry(1)], { expectedSeq: 0 });
    await first.close();
    const file = first.fileOf("run_torn");
    const complete = readFileSync(file);
    writeFileSync(
      file,
      Buffer.concat([
        complete,
        Buffer.from('{"seq":2,"at":5,"type":"model-re\u00e9', "utf8").subarray(0, 30),
      ]),
    );
    const second = newStore({ dir });
    expect(await second.read("run_torn")).toHaveLength(2);
    // read() does not change the file; the append cuts the tail off under the lock.
    expect(readFileSync(file).length).toBeGreaterThan(complete.length);
    await second.append("run_torn", [retry(2)], { expectedSeq: 2 });
    const lines = readFileSync(file, "utf8").split("\n");
    expect(lines).toHaveLength(4);
    expect(lines.slice(0, 3).map((line) => JSON.parse(line).seq)).toEqual([0, 1, 2]);
  });

  it("recovers the longest complete prefix from a log cut at any byte (property)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-cut-"));
    const writer = newStore({ dir });
    const messages = fc.sample(fc.string({ unit: "grapheme", maxLength: 40 }), {
      numRuns: 12,
      seed: 7,
    });
    const events = [
      start("run_cut"),
      ...messages.map((message, index) => retry(index + 1, message)),
    ];
    await writer.append("run_cut", events, { expectedSeq: 0 });
    await writer.close();
    const original = readFileSync(writer.fileOf("run_cut"));
    const lineEnds: number[] = [];
    for (let index = 0; index < original.length; index += 1)
      if (original[index] === 0x0a) lineEnds.push(index + 1);
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: original.length }), async (cut) => {
        round += 1;
        // The same run id in a directory per round: a log's hash chain starts from its run id,
        // so a log copied under another id would (rightly) fail its first link.
        const runId = "run_cut";
        const roundDir = join(dir, `round-${round}`);
        mkdirSync(roundDir);
        const file = join(roundDir, `${runId}.jsonl`);
        writeFileSync(file, original.subarray(0, cut));
        const store = jsonlEventStore({ dir: roundDir });
        try {
          // A line cut exactly before its newline is whole: kept (the next append adds the
          // newline); any shorter cut is a torn write, cut off.
          const kept = lineEnds.filter((end) => end <= cut || end === cut + 1).length;
          if (kept === 0) {
            // No complete event: said plainly, never read as "no such run".
            const error = await rejection(store.read(runId));
            expect(error.message).toMatch(/holds no complete event/);
          } else {
            const read = await store.read(runId);
            expect(read).toHaveLength(kept);
            expect(read.map((event) => event.seq)).toEqual([...Array(kept).keys()]);
          }
          await store.append(runId, kept === 0 ? [start(runId)] : [retry(999)], {
            expectedSeq: kept,
          });
          const again = await jsonlEventStore({ dir: roundDir }).read(runId);
          expect(again).toHaveLength(kept + 1);
          expect(readFileSync(file, "utf8").endsWith("\n")).toBe(true);
        } finally {
          await store.close();
          await rm(file);
        }
      }),
      { numRuns: 60, seed: 42 },
    );
  });

  it("names the file and line of a damaged line in the middle, and refuses to append after it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-damage-"));
    const first = newStore({ dir });
    await first.append("run_damaged", [start("run_damaged"), retry(1), retry(2), retry(3)], {
      expectedSeq: 0,
    });
    await first.close();
    const file = first.fileOf("run_damaged");
    const lines = readFileSync(file, "utf8").split("\n");
    lines[2] = lines[2]!.replace('"seq":2', '"seq":7');
    writeFileSync(file, lines.join("\n"));
    const second = newStore({ dir });
    const error = await rejection(second.read("run_damaged"));
    expect(CorruptLogError.isInstance(error) && error.code === "corrupt_log").toBe(true);
    expect(error.message).toContain(`${file}:3: the event has seq 7, expected 2`);
    const appendError = await rejection(
      second.append("run_damaged", [retry(4)], { expectedSeq: 4 }),
    );
    expect(appendError.code).toBe("corrupt_log");
    // list() trusts a summary file for the bytes it covers; without one it reads the log.
    rmSync(join(dir, "run_damaged.summary.json"));
    // One damaged log never hides the others: list() shows it as unreadable, with why.
    const [row] = await newStore({ dir }).list();
    expect(row?.status).toBe("unreadable");
    expect(row?.error).toContain(`${file}:3: the event has seq 7, expected 2`);
    expect(readFileSync(file, "utf8")).toBe(lines.join("\n"));
  });

  it("treats invalid UTF-8 and an empty line as damage", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-utf8-"));
    const store = newStore({ dir });
    await store.append("run_utf8", [start("run_utf8"), retry(1, "é")], { expectedSeq: 0 });
    const file = store.fileOf("run_utf8");
    const bytes = readFileSync(file);
    const at = bytes.indexOf(Buffer.from("é"));
    bytes[at + 1] = 0x41; // a lead byte followed by ASCII: not UTF-8
    writeFileSync(file, bytes);
    expect((await rejection(newStore({ dir }).read("run_utf8"))).message).toContain(
      `${file}:2: the line is not valid UTF-8`,
    );
    writeFileSync(
      join(dir, "run_blank.jsonl"),
      `${JSON.stringify({ seq: 0, at: 1, type: "run-start" })}\n\n`,
    );
    expect((await rejection(newStore({ dir }).read("run_blank"))).message).toContain(
      "run_blank.jsonl:2: the line is not valid JSON",
    );
  });

  it("reports a file that shrank under a writer", async () => {
    const store = newStore();
    await store.append("run_shrink", [start("run_shrink"), retry(1)], { expectedSeq: 0 });
    truncateSync(store.fileOf("run_shrink"), 10);
    const error = await rejection(store.append("run_shrink", [retry(2)], { expectedSeq: 2 }));
    expect(error.message).toMatch(/shrank from \d+ to 10 bytes/);
  });
});

describe("jsonlEventStore: durability and group commit", () => {
  /** Wraps the log's writes and syncs to track, at each moment, how many bytes of it are durable. */
  const watchDurability = () => {
    const original = { write: logFiles.write, datasync: logFiles.datasync };
    const watch = { writes: 0, syncs: 0, durableBytes: 0, operations: [] as string[] };
    logFiles.write = async (fd, buffer, offset, length, position) => {
      const written = await original.write(fd, buffer, offset, length, position);
      watch.writes += 1;
      watch.operations.push("write");
      // A write is durable when it returns only on a descriptor the kernel opened with O_DSYNC.
      if (process.platform === "linux" && (fdFlags(fd) & constants.O_DSYNC) !== 0)
        watch.durableBytes = Math.max(watch.durableBytes, position + written);
      return written;
    };
    logFiles.datasync = async (fd) => {
      const size = fstatSync(fd).size;
      await original.datasync(fd);
      watch.syncs += 1;
      watch.operations.push("datasync");
      watch.durableBytes = Math.max(watch.durableBytes, size);
    };
    return Object.assign(watch, {
      restore() {
        Object.assign(logFiles, original);
      },
    });
  };
  /** The open flags of a descriptor of this process, from /proc (Linux). */
  const fdFlags = (fd: number) =>
    Number.parseInt(
      /flags:\s*([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))![1]!,
      8,
    );

  const syncModes = [
    { mode: "the platform's (O_DSYNC on Linux)", syncFlag: logFiles.syncFlag },
    { mode: "write + fdatasync", syncFlag: 0 },
  ];
  it.each(syncModes)(
    "resolves every append only after its bytes are durable, sharing writes between appends: $mode",
    async ({ syncFlag }) => {
      const platformFlag = logFiles.syncFlag;
      logFiles.syncFlag = syncFlag;
      const watch = watchDurability();
      try {
        const store = newStore();
        await store.append("run_group", [start("run_group")], { expectedSeq: 0 });
        expect(watch.durableBytes).toBe(statSync(store.fileOf("run_group")).size);
        const coveredAtResolve: number[] = [];
        const appends = Array.from({ length: 200 }, (_, index) =>
          store
            .append("run_group", [retry(index + 1)], { expectedSeq: index + 1 })
            .then((result) => {
              coveredAtResolve[index] = watch.durableBytes;
              return result;
            }),
        );
        await Promise.all(appends);
        const text = readFileSync(store.fileOf("run_group"));
        const ends: number[] = [];
        for (let index = 0; index < text.length; index += 1)
          if (text[index] === 0x0a) ends.push(index + 1);
        expect(ends).toHaveLength(201);
        for (let index = 0; index < 200; index += 1)
          expect(coveredAtResolve[index]).toBeGreaterThanOrEqual(ends[index + 1]!);
        expect(watch.writes).toBeLessThan(20);
        if (syncFlag !== 0) expect(watch.syncs).toBe(0);
        else expect(watch.syncs).toBe(watch.writes);
      } finally {
        watch.restore();
        logFiles.syncFlag = platformFlag;
      }
    },
  );

  it("syncs lines another writer left before writing after them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-unsynced-"));
    // A writer that died between its write and its sync left two complete lines.
    writeFileSync(
      join(dir, "run_unsynced.jsonl"),
      `${JSON.stringify({ seq: 0, ...start("run_unsynced") })}\n${JSON.stringify({ seq: 1, ...retry(1) })}\n`,
    );
    const watch = watchDurability();
    try {
      const store = newStore({ dir });
      await store.append("run_unsynced", [retry(2)], { expectedSeq: 2 });
      expect(watch.operations[0]).toBe("datasync");
      expect(watch.durableBytes).toBe(statSync(store.fileOf("run_unsynced")).size);
      expect((await store.read("run_unsynced")).map((event) => event.seq)).toEqual([0, 1, 2]);
    } finally {
      watch.restore();
    }
  });

  it("fsyncs the directory when it creates a log", async () => {
    const store = newStore();
    const probe = await open(store.dir, "r");
    const prototype = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const original = prototype.sync;
    let directorySyncs = 0;
    prototype.sync = async function (this: { fd: number }) {
      if (fstatSync(this.fd).isDirectory()) directorySyncs += 1;
      return original.call(this);
    };
    try {
      await store.append("run_dir", [start("run_dir")], { expectedSeq: 0 });
      expect(directorySyncs).toBe(1);
      await store.append("run_dir", [retry(1)], { expectedSeq: 1 });
      expect(directorySyncs).toBe(1);
    } finally {
      prototype.sync = original;
    }
  });
});

describe("jsonlEventStore: the lock", () => {
  const lockFile = (store: JsonlEventStore, runId: string) => join(store.dir, `${runId}.lock`);

  it("breaks the lock of a process that died holding it", async () => {
    const store = newStore();
    const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    });
    const deadPid = Number(child.stdout);
    writeFileSync(
      lockFile(store, "run_stale"),
      JSON.stringify({ pid: deadPid, host: hostname(), token: "dead" }),
    );
    expect(await store.append("run_stale", [start("run_stale")], { expectedSeq: 0 })).toEqual({
      nextSeq: 1,
    });
    // The store keeps the lock while the run is busy, and gives it back when idle or closed.
    expect(JSON.parse(readFileSync(lockFile(store, "run_stale"), "utf8")).pid).toBe(process.pid);
    await store.close();
    expect(existsSync(lockFile(store, "run_stale"))).toBe(false);
  });

  it("keeps the lock through a burst of appends and gives it back once the run is idle", async () => {
    const store = newStore({ lockIdleMs: 150 });
    const lock = lockFile(store, "run_burst");
    await store.append("run_burst", [start("run_burst")], { expectedSeq: 0 });
    const holder = readFileSync(lock, "utf8");
    const burstStarted = Date.now();
    // Longer than lockIdleMs in all, with no idle gap: the one lease is kept throughout.
    for (let seq = 1; Date.now() - burstStarted < 400 || seq < 20; seq += 1) {
      await store.append("run_burst", [retry(seq)], { expectedSeq: seq });
      expect(readFileSync(lock, "utf8")).toBe(holder);
    }
    const burstEnded = Date.now();
    while (existsSync(lock) && Date.now() - burstEnded < 5_000)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(existsSync(lock)).toBe(false);
    expect(Date.now() - burstEnded).toBeGreaterThanOrEqual(140);
  });

  it("breaks a lock this process leaked, but waits for a live holder and then says who holds it", async () => {
    const store = newStore({ lockTimeoutMs: 150 });
    writeFileSync(
      lockFile(store, "run_leaked"),
      JSON.stringify({ pid: process.pid, host: hostname(), token: "not-held" }),
    );
    expect(await store.append("run_leaked", [start("run_leaked")], { expectedSeq: 0 })).toEqual({
      nextSeq: 1,
    });
    // pid 1 is alive (init); a holder on this host that is alive is waited for, never broken.
    writeFileSync(
      lockFile(store, "run_held"),
      JSON.stringify({ pid: 1, host: hostname(), token: "live" }),
    );
    const error = await rejection(
      store.append("run_held", [start("run_held")], { expectedSeq: 0 }),
    );
    expect(error.code).toBe("run_locked");
    expect(error.message).toContain("is held by process 1 on");
    expect(error.message).toContain(lockFile(store, "run_held"));
    expect(await store.read("run_held")).toEqual([]);
  });

  it("fences two stores that write one run through the same directory, with no lost or doubled event", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-race-"));
    const writers = [newStore({ dir }), newStore({ dir }), newStore({ dir })];
    await writers[0]!.append("run_race", [start("run_race")], { expectedSeq: 0 });
    let written = 0;
    let conflicts = 0;
    await Promise.all(
      writers.map(async (store, writer) => {
        for (let index = 0; index < 15; index += 1) {
          for (;;) {
            const length = (await store.read("run_race")).length;
            try {
              await store.append("run_race", [retry(writer * 100 + index)], {
                expectedSeq: length,
              });
              written += 1;
              break;
            } catch (error) {
              if (
                !(
                  AppendConflictError.isInstance(error) &&
                  (error as LoopguardError).code === "append_conflict"
                )
              )
                throw error;
              conflicts += 1;
            }
          }
        }
      }),
    );
    const events = await newStore({ dir }).read("run_race");
    expect(written).toBe(45);
    expect(events).toHaveLength(46);
    expect(
      new Set(events.slice(1).map((event) => (event as { attempt: number }).attempt)).size,
    ).toBe(45);
    expect(conflicts).toBeGreaterThanOrEqual(0);
  });
});

describe("jsonlEventStore: summaries", () => {
  it("lists from summary files, and reads only the log past what a stale summary covers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-summary-"));
    const first = newStore({ dir, summaryIntervalMs: 60_000 });
    await first.append("run_sum", [start("run_sum", 10)], { expectedSeq: 0 });
    const summaryFile = join(dir, "run_sum.summary.json");
    const saved = JSON.parse(readFileSync(summaryFile, "utf8"));
    expect(saved).toMatchObject({
      version: 1,
      bytes: readFileSync(first.fileOf("run_sum")).length,
      summary: { runId: "run_sum", events: 1, status: "running" },
    });
    // A retry changes no status: the summary file is left behind (as after a crash).
    await first.append("run_sum", [retry(1)], { expectedSeq: 1 });
    expect(JSON.parse(readFileSync(summaryFile, "utf8")).summary.events).toBe(1);
    const second = newStore({ dir });
    expect((await second.list())[0]).toMatchObject({
      runId: "run_sum",
      events: 2,
      updatedAt: 1001,
    });
    // A summary file that claims to cover more than the log is ignored.
    writeFileSync(summaryFile, JSON.stringify({ ...saved, bytes: 10_000_000 }));
    expect((await newStore({ dir }).list())[0]).toMatchObject({ runId: "run_sum", events: 2 });
    // close() brings summary files up to date.
    await first.close();
    expect(JSON.parse(readFileSync(summaryFile, "utf8")).summary.events).toBe(2);
  });

  it("ignores files that are not logs, and an empty log", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-jsonl-other-"));
    writeFileSync(join(dir, "notes.txt"), "hello");
    writeFileSync(join(dir, "empty.jsonl"), "");
    writeFileSync(join(dir, "torn.jsonl"), '{"seq":0,"at"');
    expect(await newStore({ dir }).list()).toEqual([]);
  });
});

describe("jsonlEventStore: rejected appends", () => {
  it("leaves no file behind for an append to an unknown run that is rejected", async () => {
    const store = newStore();
    const error = await rejection(
      store.append("run_none", [start("run_none")], { expectedSeq: 2 }),
    );
    expect(error.code).toBe("append_conflict");
    expect(existsSync(store.fileOf("run_none"))).toBe(false);
    expect(await store.append("run_none", [start("run_none")], { expectedSeq: 0 })).toEqual({
      nextSeq: 1,
    });
  });
});

describe("jsonlEventStore: locks left before a reboot", () => {
  it("breaks a lock whose holder ran before the last boot, even when its pid is alive now", async () => {
    const store = newStore({ lockTimeoutMs: 150 });
    const lock = join(store.dir, "run_reboot.lock");
    writeFileSync(
      lock,
      JSON.stringify({ pid: 1, host: hostname(), token: "old", boot: "another-boot" }),
    );
    const ours = existsSync("/proc/sys/kernel/random/boot_id");
    const outcome = await store
      .append("run_reboot", [start("run_reboot")], { expectedSeq: 0 })
      .then(
        (result) => result.nextSeq,
        (error: LoopguardError) => error.code,
      );
    // Without a boot id (not Linux) the pid decides: pid 1 is alive, so the lock holds.
    expect(outcome).toBe(ours ? 1 : "run_locked");
  });
});
