/**
 * A new store instance taking a long log (the lease's catch-up) reads it in 256 KB pieces with a
 * turn of the event loop between them: the seq, the chain and the summary come out as from one
 * read, across piece boundaries and lines longer than a piece (a 1.5 MB line); a torn tail is
 * still cut off.
 */
import { appendFileSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bareStart, retryEvent } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import { jsonlEventStore } from "./jsonl-event-store.js";

const runId = "run_catch_up";
const start = bareStart(runId);
const retry = (attempt: number, size: number) =>
  retryEvent(attempt, `${"é".repeat(attempt % 5)}${"x".repeat(size)}`, 2);

describe("jsonl catch-up in pieces", () => {
  it("a 3 MB log with a 1.5 MB line: a new instance appends after it, the chain verifies, a timer runs meanwhile", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-catch-up-"));
    const writer = jsonlEventStore({ dir });
    const events = [start];
    for (let index = 1; index < 4_000; index += 1) events.push(retry(index, 300));
    events.push(retry(4_000, 1_500_000));
    for (let index = 4_001; index < 5_000; index += 1) events.push(retry(index, 300));
    await writer.append(runId, events, { expectedSeq: 0 });
    await writer.close();
    expect(statSync(writer.fileOf(runId)).size).toBeGreaterThan(3_000_000);
    // A torn write at the end (a process that died mid-append).
    appendFileSync(writer.fileOf(runId), '{"type":"model-retry","seq":5000,"att');

    const taker = jsonlEventStore({ dir });
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 0);
    const appended = await taker.append(runId, [retry(5_000, 10)], { expectedSeq: 5_000 });
    clearInterval(timer);
    expect(appended.nextSeq).toBe(5_001);
    expect(ticks).toBeGreaterThan(0);
    const read = await taker.read(runId);
    expect(read).toHaveLength(5_001);
    expect(read.map((event) => event.seq)).toEqual(read.map((_, index) => index));
    expect(await taker.verify(runId)).toMatchObject({ ok: true });
    const [summary] = await taker.list();
    expect(summary).toMatchObject({ runId, events: 5_001 });
    await taker.close();
  });
});
