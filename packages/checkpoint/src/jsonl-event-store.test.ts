import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeEventStore } from "@loopguard/core/testing";
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
