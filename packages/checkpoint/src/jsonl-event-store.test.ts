import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeEventStore } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import { type JsonlEventStore, jsonlEventStore } from "./jsonl-event-store.js";

const dirOf = (store: unknown) => (store as JsonlEventStore).dir;
const newDir = () => mkdtempSync(join(tmpdir(), "lg-jsonl-"));

await describeEventStore({
  name: "jsonlEventStore",
  create: () => jsonlEventStore({ dir: newDir() }),
  reopen: (previous) => jsonlEventStore({ dir: dirOf(previous) }),
  corruptTail: (runId, store) => {
    appendFileSync((store as JsonlEventStore).fileOf(runId), '{"seq":3,"at":17,"type":"run-e');
  },
  corruptLine: (runId, seq, store) => {
    const file = (store as JsonlEventStore).fileOf(runId);
    const lines = readFileSync(file, "utf8").split("\n");
    lines[seq] = `${lines[seq]!.slice(0, 20)}#garbage`;
    writeFileSync(file, lines.join("\n"));
    return `${runId}.jsonl:${seq + 1}`;
  },
});

describe("a log whose first write never finished", () => {
  it("is refused as corrupt_log with neverStarted: true, and its first append replaces it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-torn-first-"));
    writeFileSync(join(dir, "run_torn.jsonl"), '{"seq":0,"type":"run-start","runId":"run_to');
    const store = jsonlEventStore({ dir });
    const error = (await store.read("run_torn").catch((caught: unknown) => caught)) as {
      code?: string;
      neverStarted?: boolean;
    };
    expect(error.code).toBe("corrupt_log");
    expect(error.neverStarted).toBe(true);
    await store.append(
      "run_torn",
      [{ type: "run-halt", reason: "test", message: "first complete event", at: 1 } as never],
      { expectedSeq: 0 },
    );
    expect(await store.read("run_torn")).toHaveLength(1);
    await store.close();
  });
});
