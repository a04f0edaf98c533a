// Durability: `node durability.mjs [events]`. JSONL appends with fsync (one run, then 100
// concurrent runs) against a plain append+fsync loop on the same disk: the physical limit.
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { jsonlEventStore } from "@loopguard/checkpoint";

const events = Number(process.argv[2] ?? 2000);
const dir = mkdtempSync(join(tmpdir(), "loopguard-durability-"));
const line = (seq) => ({
  type: "tool-call-result",
  step: 1,
  toolUseId: `t${seq}`,
  tool: "lookup_order",
  status: "ok",
  content: "x".repeat(200),
  isError: false,
  durationMs: 1,
  attempts: 1,
  at: Date.now(),
});
try {
  // The floor: write one line and fsync, in a loop, on the same disk. Measured before and after
  // the store (the disk's speed drifts while it warms up); the better of the two counts.
  const plainLoop = (name) => {
    const fd = openSync(join(dir, name), "a");
    const begun = performance.now();
    for (let seq = 0; seq < events; seq += 1) {
      writeSync(fd, `${JSON.stringify({ ...line(seq), seq })}\n`);
      fsyncSync(fd);
    }
    const perSecond = events / ((performance.now() - begun) / 1000);
    closeSync(fd);
    return perSecond;
  };
  const plainBefore = plainLoop("plain-1.jsonl");
  let started;

  const store = jsonlEventStore({ dir: join(dir, "runs") });
  const start = {
    type: "run-start",
    runId: "one",
    agentId: "a",
    task: "t",
    model: "m",
    maxTokens: 1,
    budget: {},
    policyDigest: "",
    toolDigest: "",
    at: Date.now(),
  };
  await store.append("one", [start], { expectedSeq: 0 });
  started = performance.now();
  for (let seq = 1; seq <= events; seq += 1)
    await store.append("one", [line(seq)], { expectedSeq: seq });
  const oneRun = events / ((performance.now() - started) / 1000);

  const runs = 100;
  const perRun = Math.max(5, Math.floor(events / runs));
  for (let index = 0; index < runs; index += 1)
    await store.append(`r${index}`, [{ ...start, runId: `r${index}` }], { expectedSeq: 0 });
  started = performance.now();
  await Promise.all(
    Array.from({ length: runs }, async (_, index) => {
      for (let seq = 1; seq <= perRun; seq += 1)
        await store.append(`r${index}`, [line(seq)], { expectedSeq: seq });
    }),
  );
  const concurrent = (runs * perRun) / ((performance.now() - started) / 1000);
  await store.close?.();
  const plain = Math.max(plainBefore, plainLoop("plain-2.jsonl"));
  console.log(
    JSON.stringify({
      events,
      plainFsyncPerSecond: Math.round(plain),
      jsonlOneRunPerSecond: Math.round(oneRun),
      jsonl100RunsPerSecond: Math.round(concurrent),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
