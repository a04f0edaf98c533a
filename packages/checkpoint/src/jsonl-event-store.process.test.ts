import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildForChild } from "./__fixtures__/build-for-child.js";
import { jsonlEventStore } from "./jsonl-event-store.js";

// Several real processes append to ONE run through the same directory, each reading the log's
// length and retrying on a conflict: the lock file must serialise them across processes (no
// interleaved or lost line), and a writer killed while holding the lock must not block the rest.
const writerSource = `
import { jsonlEventStore } from "./checkpoint/jsonl-event-store.js";
const [dir, runId, writer, count] = process.argv.slice(2);
const store = jsonlEventStore({ dir, lockIdleMs: 5 });
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
await store.close();
process.stdout.write("done " + conflicts + "\\n");
`;

interface WriterOutcome {
  acked: string[];
  conflicts: number;
  killed: boolean;
}

function startWriter(
  root: string,
  dir: string,
  writer: number,
  count: number,
  killAfterAcks?: number,
): Promise<WriterOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(root, "writer.mjs"), dir, "run_shared", String(writer), String(count)],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      if (
        killAfterAcks !== undefined &&
        stdout.split("\n").filter((line) => line.startsWith("ack ")).length >= killAfterAcks
      )
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
        conflicts: Number(lines.find((line) => line.startsWith("done "))?.slice(5) ?? 0),
        killed: signal === "SIGKILL",
      });
    });
  });
}

describe("jsonlEventStore across processes", () => {
  let root: string;
  beforeAll(() => {
    root = buildForChild();
    writeFileSync(join(root, "writer.mjs"), writerSource);
  });

  it("serialises four processes appending to one run: every acknowledged event once, in seq order, no torn line", {
    timeout: 600_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-processes-"));
    const outcomes = await Promise.all(
      [0, 1, 2, 3].map((writer) => startWriter(root, dir, writer, 20)),
    );
    const events = await jsonlEventStore({ dir }).read("run_shared");
    expect(events).toHaveLength(80);
    expect(events.map((event) => event.seq)).toEqual([...Array(80).keys()]);
    const messages = events.map((event) => (event as { message: string }).message);
    expect(new Set(messages).size).toBe(80);
    for (const outcome of outcomes)
      for (const acked of outcome.acked) expect(messages).toContain(acked);
    // Each writer's own events keep their order.
    for (const writer of [0, 1, 2, 3]) {
      const own = messages.filter((message) => message.startsWith(`${writer}:`));
      expect(own).toEqual(Array.from({ length: 20 }, (_, index) => `${writer}:${index}`));
    }
    expect(existsSync(join(dir, "run_shared.lock"))).toBe(false);
  });

  it("lets the others finish when a writer is SIGKILLed (its lock is broken), losing none of its acknowledged events", {
    timeout: 600_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-processes-kill-"));
    const outcomes = await Promise.all([
      startWriter(root, dir, 0, 40, 6),
      startWriter(root, dir, 1, 15),
      startWriter(root, dir, 2, 15),
    ]);
    expect(outcomes[0]!.killed).toBe(true);
    const events = await jsonlEventStore({ dir }).read("run_shared");
    const messages = events.map((event) => (event as { message: string }).message);
    expect(events.map((event) => event.seq)).toEqual([...Array(events.length).keys()]);
    expect(new Set(messages).size).toBe(messages.length);
    for (const outcome of outcomes)
      for (const acked of outcome.acked) expect(messages).toContain(acked);
    expect(messages.filter((message) => !message.startsWith("0:"))).toHaveLength(30);
    // The killed writer got at most one append past its last acknowledgement onto the disk.
    expect(
      messages.filter((message) => message.startsWith("0:")).length - outcomes[0]!.acked.length,
    ).toBeLessThanOrEqual(1);
  });
});
