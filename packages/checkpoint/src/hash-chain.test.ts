/**
 * The tamper-evident log, through the JSONL and SQLite stores (PostgreSQL: test/pg): a log
 * whose lines were edited, deleted, reordered, forged or cut short is caught by verifyRun,
 * naming the first bad seq, and refused by read (so by resume). Tampering is generated: which
 * event, which field, which operation.
 */
import { mkdtempSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CorruptLogError,
  createAgent,
  type EventStore,
  type StoredEventInput,
} from "@loopguard/core";
import { retryLog, scriptedModel } from "@loopguard/core/testing";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { link, splitChain } from "./hash-chain.js";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";
import { verifyRun } from "./verify-run.js";

const key = "a-test-log-key-of-32-characters!";
const runId = "run_chain";
const events = (count: number): StoredEventInput[] =>
  retryLog(runId, count, { task: "refund A1001" });

/** One of the ways an attacker changes a log, applied to its lines (seq order). */
type Tamper =
  | { type: "edit"; seq: number }
  | { type: "delete"; seq: number }
  | { type: "swap"; seq: number }
  | { type: "cut"; keep: number };
/** The first seq a tampering breaks. */
const firstBad = (tamper: Tamper) => (tamper.type === "cut" ? tamper.keep : tamper.seq);
const tamperArbitrary = (count: number) =>
  fc.oneof(
    fc.record({ type: fc.constant("edit" as const), seq: fc.integer({ min: 0, max: count - 1 }) }),
    fc.record({
      type: fc.constant("delete" as const),
      seq: fc.integer({ min: 0, max: count - 2 }),
    }),
    fc.record({ type: fc.constant("swap" as const), seq: fc.integer({ min: 0, max: count - 2 }) }),
    fc.record({ type: fc.constant("cut" as const), keep: fc.integer({ min: 1, max: count - 1 }) }),
  );
/** Applies a tampering to JSONL lines: an edit changes a value in place, keeping the chain text. */
function tamperLines(lines: string[], tamper: Tamper): string[] {
  const out = [...lines];
  if (tamper.type === "edit")
    out[tamper.seq] = out[tamper.seq]!.replace(/"at":(\d+)/, (_, at) => `"at":${Number(at) + 1}`);
  if (tamper.type === "delete") out.splice(tamper.seq, 1);
  if (tamper.type === "swap")
    [out[tamper.seq], out[tamper.seq + 1]] = [out[tamper.seq + 1]!, out[tamper.seq]!];
  if (tamper.type === "cut") out.length = tamper.keep;
  return out;
}

const stores: EventStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close?.()));
});

describe("jsonl: a tamper-evident log", () => {
  const count = 8;
  const written = async (options: { logKey?: string } = {}) => {
    const dir = mkdtempSync(join(tmpdir(), "lg-chain-"));
    const store = jsonlEventStore({ dir, ...options });
    await store.append(runId, events(count), { expectedSeq: 0 });
    await store.close();
    return { dir, file: store.fileOf(runId) };
  };
  const open = (dir: string, options: { logKey?: string } = {}) => {
    const store = jsonlEventStore({ dir, ...options });
    stores.push(store);
    return store;
  };

  it("verifies an intact log, with and without a key, and says which chain it checked", async () => {
    const plain = await written();
    expect(await verifyRun(open(plain.dir), runId)).toMatchObject({
      ok: true,
      events: count,
      chain: "sha256",
    });
    const keyed = await written({ logKey: key });
    expect(await verifyRun(open(keyed.dir, { logKey: key }), runId)).toMatchObject({
      ok: true,
      chain: "hmac",
    });
    // Without the key the HMACs cannot be checked, and the result says so.
    expect(await verifyRun(open(keyed.dir), runId)).toMatchObject({
      ok: true,
      chain: "hmac-unchecked",
    });
  });

  it("names the first bad seq of any edit, deletion, reorder or cut, and read refuses all but the cut", async () => {
    const { dir, file } = await written();
    const original = readFileSync(file, "utf8").split("\n").slice(0, -1);
    const summary = readFileSync(join(dir, `${runId}.summary.json`), "utf8");
    await fc.assert(
      fc.asyncProperty(tamperArbitrary(count), async (tamper) => {
        writeFileSync(file, `${tamperLines(original, tamper).join("\n")}\n`);
        writeFileSync(join(dir, `${runId}.summary.json`), summary);
        const store = open(dir);
        const result = await verifyRun(store, runId);
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.firstBadSeq).toBe(firstBad(tamper));
        // A cut log is a valid prefix: only the head in the summary shows the cut.
        if (tamper.type !== "cut")
          await expect(store.read(runId)).rejects.toSatisfy(CorruptLogError.isInstance);
      }),
      { numRuns: 40, seed: 15 },
    );
  });

  it("with a key, refuses a line forged with a recomputed plain chain; without one, only the summary's head tells", async () => {
    for (const logKey of [undefined, key]) {
      const { dir, file } = await written(logKey ? { logKey } : {});
      const lines = readFileSync(file, "utf8").split("\n").slice(0, -1);
      // The forger edits the last line and recomputes its SHA-256 link from the line before.
      const previous = splitChain(lines.at(-2)!).chain!;
      const edited = splitChain(lines.at(-1)!).text.replace('"m6"', '"forged"');
      lines[lines.length - 1] =
        `${edited.slice(0, -1)},"chain":"${link(previous, edited, undefined)}"}`;
      writeFileSync(file, `${lines.join("\n")}\n`);
      const result = await verifyRun(open(dir, logKey ? { logKey } : {}), runId);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.firstBadSeq).toBe(count - 1);
        expect(result.reason).toMatch(
          logKey ? /plain SHA-256 hash, but a log key is set/ : /not the one the summary recorded/,
        );
      }
    }
  });

  it("resume refuses a broken chain with a clear error, before any step", async () => {
    const { dir, file } = await written();
    writeFileSync(
      file,
      `${tamperLines(readFileSync(file, "utf8").split("\n").slice(0, -1), { type: "edit", seq: 3 }).join("\n")}\n`,
    );
    const agent = createAgent({
      store: open(dir),
      tools: [],
      model: scriptedModel([{ content: "never asked" }]),
    });
    await expect(agent.resume(runId)).rejects.toThrow(
      /run_chain\.jsonl:4: its hash does not follow from the event before it/,
    );
  });

  it("handles an empty log and a last line missing only its newline explicitly", async () => {
    const { dir, file } = await written();
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.slice(0, -1));
    const store = open(dir);
    expect(await store.read(runId)).toHaveLength(count);
    expect(await verifyRun(store, runId)).toMatchObject({
      ok: true,
      notes: [expect.stringMatching(/lacks its newline: accepted/)],
    });
    await store.append(runId, events(2).slice(1), { expectedSeq: count });
    expect(readFileSync(file, "utf8").startsWith(text)).toBe(true);
    writeFileSync(file, "");
    await expect(open(dir).read(runId)).rejects.toThrow(/holds no complete event/);
    expect(await verifyRun(open(dir), runId)).toMatchObject({ ok: false, firstBadSeq: 0 });
  });
});

describe("jsonl: a keyed log cannot be cut short quietly", () => {
  const count = 8;
  const written = async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-keyed-"));
    const store = jsonlEventStore({ dir, logKey: key });
    await store.append(runId, events(count), { expectedSeq: 0 });
    await store.close();
    return { dir, file: store.fileOf(runId), summary: join(dir, `${runId}.summary.json`) };
  };
  const verify = (dir: string, logKey?: string) => {
    const store = jsonlEventStore({ dir, ...(logKey ? { logKey } : {}) });
    stores.push(store);
    return verifyRun(store, runId);
  };
  const cut = (file: string, keep: number) => {
    const lines = readFileSync(file, "utf8").split("\n").slice(0, -1);
    writeFileSync(file, `${lines.slice(0, keep).join("\n")}\n`);
    return lines;
  };

  it("with the key, fails a log cut short whose summary is missing, empty, rewritten to match or older", async () => {
    const tampers: Array<[string, (paths: Awaited<ReturnType<typeof written>>) => void]> = [
      ["summary deleted", ({ summary }) => unlinkSync(summary)],
      ["summary emptied", ({ summary }) => writeFileSync(summary, "")],
      [
        "summary rewritten to match the cut (head copied from the log)",
        ({ summary, file }) => {
          const lines = readFileSync(file, "utf8").split("\n").slice(0, -1);
          const saved = JSON.parse(readFileSync(summary, "utf8"));
          saved.summary.events = lines.length;
          saved.head = splitChain(lines.at(-1)!).chain;
          writeFileSync(summary, JSON.stringify(saved));
        },
      ],
    ];
    for (const [name, tamper] of tampers) {
      const paths = await written();
      cut(paths.file, 5);
      tamper(paths);
      const result = await verify(paths.dir, key);
      expect(result.ok, name).toBe(false);
      if (!result.ok) expect(result.reason, name).toMatch(/does not end in a run-end/);
    }
    // An older genuine summary (it covered 5 events) put back beside a longer log cut at 7.
    const dir = mkdtempSync(join(tmpdir(), "lg-keyed-"));
    const store = jsonlEventStore({ dir, logKey: key });
    await store.append(runId, events(count).slice(0, 5), { expectedSeq: 0 });
    await store.close();
    const older = readFileSync(join(dir, `${runId}.summary.json`), "utf8");
    const again = jsonlEventStore({ dir, logKey: key });
    await again.append(runId, events(count).slice(5), { expectedSeq: 5 });
    await again.close();
    cut(again.fileOf(runId), 7);
    writeFileSync(join(dir, `${runId}.summary.json`), older);
    const behind = await verify(dir, key);
    expect(behind).toMatchObject({ ok: false, firstBadSeq: 5 });
    if (!behind.ok) expect(behind.reason).toMatch(/covers 5 of its 7 events/);
    // The untouched log still verifies.
    expect(await verify((await written()).dir, key)).toMatchObject({ ok: true, chain: "hmac" });
  });

  it("with the key, accepts a log that ends in its keyed run-end even with the summary gone", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-keyed-"));
    const store = jsonlEventStore({ dir, logKey: key });
    const agent = createAgent({ store, tools: [], model: scriptedModel([{ content: "done" }]) });
    const result = await agent.run("hello");
    await store.close();
    unlinkSync(join(dir, `${result.runId}.summary.json`));
    const check = jsonlEventStore({ dir, logKey: key });
    stores.push(check);
    expect(await verifyRun(check, result.runId)).toMatchObject({ ok: true, chain: "hmac" });
  });

  it("without the key, never calls a keyed log intact: genuine, or re-chained with plain SHA-256", async () => {
    const genuine = await written();
    expect(await verify(genuine.dir)).toMatchObject({ ok: true, chain: "hmac-unchecked" });
    for (const keepSummary of [true, false]) {
      const paths = await written();
      const lines = readFileSync(paths.file, "utf8").split("\n").slice(0, -1);
      let previous = `loopguard:${runId}`;
      const rechained = lines.map((line) => {
        const { text } = splitChain(line);
        previous = link(previous, text, undefined);
        return `${text.slice(0, -1)},"chain":"${previous}"}`;
      });
      writeFileSync(paths.file, `${rechained.join("\n")}\n`);
      if (!keepSummary) unlinkSync(paths.summary);
      const result = await verify(paths.dir);
      // Never "intact": with the summary kept its keyed head no longer matches (broken); with it
      // deleted, the directory's marker says the logs are keyed (key needed).
      if (keepSummary) expect(result).toMatchObject({ ok: false, firstBadSeq: count - 1 });
      else {
        expect(result).toMatchObject({ ok: true, chain: "hmac-unchecked" });
        if (result.ok) expect(result.notes.join(" ")).toMatch(/re-chained without the key/);
      }
      // With the key, the plain hashes are refused outright.
      expect((await verify(paths.dir, key)).ok).toBe(false);
    }
  });
});

describe("sqlite: a tamper-evident log", () => {
  const count = 6;
  it("names the first bad seq of an edited, deleted or cut row, and read refuses the edit", async () => {
    for (const tamper of [
      { type: "edit", seq: 2 },
      { type: "delete", seq: 3 },
      { type: "cut", keep: 4 },
    ] as Tamper[]) {
      const path = join(mkdtempSync(join(tmpdir(), "lg-chain-")), "runs.db");
      const store = sqliteEventStore({ path });
      stores.push(store);
      await store.append(runId, events(count), { expectedSeq: 0 });
      expect(await verifyRun(store, runId)).toMatchObject({
        ok: true,
        chain: "sha256",
        events: count,
      });
      const db = new Database(path);
      if (tamper.type === "edit")
        db.prepare(
          "UPDATE loopguard_events SET body = replace(body, '\"step\":1', '\"step\":2') WHERE seq = ?",
        ).run(tamper.seq);
      if (tamper.type === "delete")
        db.prepare("DELETE FROM loopguard_events WHERE seq = ?").run(tamper.seq);
      if (tamper.type === "cut")
        db.prepare("DELETE FROM loopguard_events WHERE seq >= ?").run(tamper.keep);
      db.close();
      const result = await verifyRun(store, runId);
      expect(result.ok, JSON.stringify(tamper)).toBe(false);
      if (!result.ok) expect(result.firstBadSeq).toBe(firstBad(tamper));
      if (tamper.type === "edit")
        await expect(store.read(runId)).rejects.toThrow(/its hash does not follow/);
    }
  });
});
