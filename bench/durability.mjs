// Durability: `node durability.mjs [events]`. JSONL appends with fdatasync (one run, then 100
// concurrent runs) against a plain append+fdatasync loop on the same disk: the physical limit.
// Prints events per second of each and the ratios, each ratio taken against the plain loop run
// right beside it (the disk's speed drifts when other work shares it).
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
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
  // The floor: write one line and sync it, in a loop, on the same disk. fdatasync, as the store
  // does (the data and the file size, not the timestamps): under contention a full fsync is
  // several times slower, which would flatter the store.
  let plainFiles = 0;
  const plainLoop = (count) => {
    plainFiles += 1;
    const fd = openSync(join(dir, `plain-${plainFiles}.jsonl`), "a");
    const begun = performance.now();
    for (let seq = 0; seq < count; seq += 1) {
      writeSync(fd, `${JSON.stringify({ ...line(seq), seq })}\n`);
      fdatasyncSync(fd);
    }
    const perSecond = count / ((performance.now() - begun) / 1000);
    closeSync(fd);
    return perSecond;
  };
  // The same loop through Node's asynchronous file API (what a store that must not block the
  // event loop uses): a write and a datasync, each a round trip through libuv's thread pool.
  const asyncLoop = async (count) => {
    plainFiles += 1;
    const handle = await open(join(dir, `async-${plainFiles}.jsonl`), "a");
    const begun = performance.now();
    for (let seq = 0; seq < count; seq += 1) {
      await handle.write(`${JSON.stringify({ ...line(seq), seq })}\n`);
      await handle.datasync();
    }
    const perSecond = count / ((performance.now() - begun) / 1000);
    await handle.close();
    return perSecond;
  };

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
  // The disk's speed drifts (other work shares it): the plain loop and the store take turns in
  // rounds, and each round gives a ratio.
  const rounds = 8;
  const perRound = Math.max(50, Math.floor(events / rounds));
  const plainRates = [];
  const asyncRates = [];
  const oneRunRates = [];
  let next = 1;
  for (let round = 0; round < rounds; round += 1) {
    const jsonlRound = async () => {
      const begun = performance.now();
      for (let count = 0; count < perRound; count += 1, next += 1)
        await store.append("one", [line(next)], { expectedSeq: next });
      oneRunRates.push(perRound / ((performance.now() - begun) / 1000));
    };
    if (round % 2 === 0) {
      plainRates.push(plainLoop(perRound));
      asyncRates.push(await asyncLoop(perRound));
      await jsonlRound();
    } else {
      await jsonlRound();
      asyncRates.push(await asyncLoop(perRound));
      plainRates.push(plainLoop(perRound));
    }
  }
  const middle = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const plain = middle(plainRates);
  const oneRun = middle(oneRunRates);
  const oneRunRatio = middle(oneRunRates.map((rate, index) => rate / plainRates[index]));
  const asyncRatio = middle(asyncRates.map((rate, index) => rate / plainRates[index]));

  const runs = 100;
  const perRun = Math.max(5, Math.floor(events / runs));
  for (let index = 0; index < runs; index += 1)
    await store.append(`r${index}`, [{ ...start, runId: `r${index}` }], { expectedSeq: 0 });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: runs }, async (_, index) => {
      for (let seq = 1; seq <= perRun; seq += 1)
        await store.append(`r${index}`, [line(seq)], { expectedSeq: seq });
    }),
  );
  const concurrent = (runs * perRun) / ((performance.now() - started) / 1000);
  const plainAfter = plainLoop(perRound);
  await store.close?.();
  console.log(
    JSON.stringify({
      events,
      plainFsyncPerSecond: Math.round(plain),
      plainAsyncPerSecond: Math.round(middle(asyncRates)),
      asyncRatio: +asyncRatio.toFixed(3),
      jsonlOneRunPerSecond: Math.round(oneRun),
      jsonl100RunsPerSecond: Math.round(concurrent),
      oneRunRatio: +oneRunRatio.toFixed(3),
      manyRunsRatio: +(concurrent / plainAfter).toFixed(3),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
