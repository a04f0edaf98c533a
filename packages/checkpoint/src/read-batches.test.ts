/**
 * Reading a long log in batches (JSONL and SQLite): the batches add up to exactly what `read`
 * returns, across 1 MB read boundaries, with the chain checked as they go; a tampered event
 * stops the iteration at that event; an unknown run yields nothing. The figures (event-loop
 * delay, RSS) are printed, not asserted.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { StoredEvent, StoredEventInput } from "@loopguard/core";
import { retryLog } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

const runId = "run_long";
const events = (count: number): StoredEventInput[] =>
  retryLog(runId, count, { message: (index) => `${"é".repeat(index % 7)}${"x".repeat(300)}` });

async function collect(batches: AsyncIterable<StoredEvent[]>) {
  const all: StoredEvent[] = [];
  let largest = 0;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  for await (const batch of batches) {
    largest = Math.max(largest, batch.length);
    all.push(...batch);
  }
  delay.disable();
  return { all, largest, maxDelayMs: delay.max / 1e6 };
}

describe("readBatches", () => {
  const count = 12_000;
  const stores = [
    ["jsonl", () => jsonlEventStore({ dir: mkdtempSync(join(tmpdir(), "lg-batches-")) })],
    [
      "sqlite",
      () => sqliteEventStore({ path: join(mkdtempSync(join(tmpdir(), "lg-batches-")), "runs.db") }),
    ],
  ] as const;
  for (const [name, make] of stores) {
    it(`${name}: batches add up to read(), at most batchSize each; an unknown run yields nothing`, async () => {
      const store = make();
      for (let from = 0; from < count; from += 3_000)
        await store.append(runId, events(count).slice(from, from + 3_000), { expectedSeq: from });
      const { all, largest, maxDelayMs } = await collect(
        store.readBatches(runId, { batchSize: 700 }),
      );
      expect(all).toEqual(await store.read(runId));
      expect(all).toHaveLength(count);
      expect(largest).toBe(700);
      console.log(
        `[batches] ${name}: ${count} events in batches of 700, event-loop delay max ${maxDelayMs.toFixed(1)} ms`,
      );
      expect((await collect(store.readBatches("run_unknown"))).all).toEqual([]);
      await expect(collect(store.readBatches(runId, { batchSize: 0 }))).rejects.toThrow(
        /batchSize must be a positive integer/,
      );
      await store.close();
    });
  }

  it("jsonl: stops at a tampered event, naming its line, after yielding the events before it", async () => {
    const store = jsonlEventStore({ dir: mkdtempSync(join(tmpdir(), "lg-batches-")) });
    await store.append(runId, events(5_000), { expectedSeq: 0 });
    await store.close();
    const file = store.fileOf(runId);
    const lines = readFileSync(file, "utf8").split("\n");
    lines[4_321] = lines[4_321]!.replace('"attempt":4320', '"attempt":1');
    writeFileSync(file, lines.join("\n"));
    const reader = jsonlEventStore({ dir: store.dir });
    const seen: number[] = [];
    const error = await (async () => {
      for await (const batch of reader.readBatches(runId, { batchSize: 1_000 }))
        seen.push(...batch.map((event) => event.seq));
    })().then(
      () => undefined,
      (rejection: unknown) => rejection as Error,
    );
    expect(error?.message).toMatch(/run_long\.jsonl:4322: its hash does not follow/);
    expect(seen.at(-1)).toBeLessThan(4_321);
    await reader.close();
  });
});
