import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildForChild } from "./__fixtures__/build-for-child.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

// Real processes append to ONE run in one SQLite file through the store's writer thread, each
// reading the log's length and retrying on a conflict, and print each append once it resolved.
// One is killed with SIGKILL mid-stream: every append a writer saw resolve must be in the log
// exactly once, the chain must verify, and a writer that never closes its store must still
// exit (the thread does not keep the process alive).
const writerSource = `
import { sqliteEventStore } from "./checkpoint/sqlite-event-store.js";
const [path, runId, writer, count, close] = process.argv.slice(2);
const store = sqliteEventStore({ path });
let conflicts = 0;
for (let index = 0; index < Number(count); index += 1) {
  for (;;) {
    const length = (await store.read(runId)).length;
    try {
      const event = { type: "model-retry", step: 1, attempt: index, kind: "writer", waitMs: 0, message: writer + ":" + index, at: Date.now() };
      await store.append(runId, [event], { expectedSeq: length });
      process.stdout.write("ack " + writer + ":" + index + "\\n");
      break;
    } catch (error) {
      if (error.code !== "append_conflict") throw error;
      conflicts += 1;
    }
  }
}
if (close === "close") await store.close();
process.stdout.write("done " + conflicts + "\\n");
`;

interface WriterOutcome {
  acked: string[];
  done: boolean;
  killed: boolean;
}

function startWriter(
  root: string,
  path: string,
  writer: number,
  count: number,
  options: { killAfterAcks?: number; close: boolean },
): Promise<WriterOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(root, "writer.mjs"),
        path,
        "run_shared",
        String(writer),
        String(count),
        options.close ? "close" : "keep",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const acks = stdout.split("\n").filter((line) => line.startsWith("ack ")).length;
      if (options.killAfterAcks !== undefined && acks >= options.killAfterAcks)
        child.kill("SIGKILL");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code !== 0 && signal !== "SIGKILL") {
        reject(new Error(`writer ${writer} failed (${code ?? signal}): ${stderr}`));
        return;
      }
      const lines = stdout.split("\n");
      resolve({
        acked: lines.filter((line) => line.startsWith("ack ")).map((line) => line.slice(4)),
        done: lines.some((line) => line.startsWith("done ")),
        killed: signal === "SIGKILL",
      });
    });
  });
}

describe("the SQLite store's writer thread, across processes", () => {
  let root: string;
  beforeAll(() => {
    root = buildForChild();
    writeFileSync(join(root, "writer.mjs"), writerSource);
  });

  it("keeps every acknowledged append through a SIGKILL, fenced across processes, and lets a process exit without close", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "lg-sqlite-kill-")), "runs.db");
    const outcomes = await Promise.all([
      startWriter(root, path, 1, 40, { close: true }),
      // Never closes its store: it must exit on its own once its appends are done.
      startWriter(root, path, 2, 40, { close: false }),
      startWriter(root, path, 3, 1_000, { killAfterAcks: 10, close: true }),
    ]);
    expect(outcomes.map((outcome) => [outcome.done, outcome.killed])).toEqual([
      [true, false],
      [true, false],
      [false, true],
    ]);
    const store = sqliteEventStore({ path });
    const log = await store.read("run_shared");
    const written = log.map((event) => (event as { message?: string }).message);
    // Each acknowledged append is there exactly once; nothing is there twice.
    for (const outcome of outcomes)
      for (const acked of outcome.acked)
        expect(written.filter((message) => message === acked)).toHaveLength(1);
    expect(new Set(written).size).toBe(written.length);
    expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index));
    expect(await store.verify("run_shared")).toMatchObject({ ok: true });
    expect((await store.list())[0]?.events).toBe(log.length);
    await store.close();
  });
});
