/**
 * Crash-safe delegation with durable stores: a real node process runs a parent agent whose
 * `asTool` child is mid-run, and is killed with SIGKILL at a random moment; a new process then
 * calls `agent.resume(parentRunId)`. The resumed tree must finish the same child run (the same
 * id, never a second child), then the parent, and every side effect of the tree (the child's
 * refund and email, the parent's ticket) must have happened exactly once.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childRunId, type EventStore, type StoredEvent } from "@loopguard/core";
import { foldRun } from "@loopguard/core/plugin";
import { beforeAll, describe, expect, it } from "vitest";
import { buildForChild } from "./__fixtures__/build-for-child.js";
import { deskAnswer, deskCallId, deskTask, deskTree } from "./__fixtures__/delegation-desk.js";
import { fileLedger, memoryLedger } from "./__fixtures__/support-desk.js";
import { jsonlEventStore } from "./jsonl-event-store.js";
import { sqliteEventStore } from "./sqlite-event-store.js";

type Kind = "jsonl" | "sqlite";

const newDir = (label: string) => mkdtempSync(join(tmpdir(), `lg-tree-${label}-`));

/** A trial's store lives in `<dir>/store`, its ledger beside it in `<dir>/ledger.jsonl`. */
const openStore = (kind: Kind, dir: string): EventStore & { close(): Promise<void> } =>
  kind === "jsonl"
    ? jsonlEventStore({ dir: join(dir, "store") })
    : sqliteEventStore({ path: join(dir, "runs.db") });

const childSource = `
import { join } from "node:path";
import { jsonlEventStore } from "./checkpoint/jsonl-event-store.js";
import { sqliteEventStore } from "./checkpoint/sqlite-event-store.js";
import { fileLedger } from "./checkpoint/__fixtures__/support-desk.js";
import { deskTree, deskTask } from "./checkpoint/__fixtures__/delegation-desk.js";
const [kind, dir, ledgerPath, runId, delayMs, mode, killAck, killDelayMs] = process.argv.slice(2);
const store = kind === "jsonl" ? jsonlEventStore({ dir: join(dir, "store") }) : sqliteEventStore({ path: join(dir, "runs.db") });
// Each durable event of the tree is acknowledged. With a kill point, the process SIGKILLs
// itself killDelayMs after its killAck-th event (0: after it is ready): a point of the run, not
// of the clock, so kills spread over the run however loaded the machine is.
let acks = 0;
const kill = () => setTimeout(() => process.kill(process.pid, "SIGKILL"), Number(killDelayMs));
const onEvent = () => {
  acks += 1;
  process.stdout.write("ack\\n");
  if (killAck !== undefined && acks === Number(killAck)) kill();
};
if (killAck === "0") kill();
const agent = deskTree({ store, ledger: fileLedger(ledgerPath), delayMs: Number(delayMs), onEvent });
process.stdout.write("ready\\n");
try {
  const result = mode === "run" ? await agent.run(deskTask, { runId }) : await agent.resume(runId);
  process.stdout.write("done " + result.status + " " + JSON.stringify(result.answer ?? result.error ?? "") + "\\n");
} catch (error) {
  process.stdout.write("threw " + (error.code ?? "") + " " + JSON.stringify(String(error.message)) + "\\n");
}
await store.close();
`;

/** A seeded generator, so a failing trial can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

interface Outcome {
  stdout: string;
  /** Events of the tree acknowledged as durable. */
  acks: number;
}

/** Where to kill: `delayMs` after the `ack`-th acknowledged event (0: after the process is ready). */
interface KillPoint {
  ack: number;
  delayMs: number;
}

/** Runs the tree in a child process (`run` or `resume`); it SIGKILLs itself at `kill`. */
function runTree(
  root: string,
  kind: Kind,
  dir: string,
  runId: string,
  mode: "run" | "resume",
  kill?: KillPoint,
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [
        join(root, "tree.mjs"),
        kind,
        dir,
        join(dir, "ledger.jsonl"),
        runId,
        "3",
        mode,
        ...(kill ? [String(kill.ack), String(kill.delayMs)] : []),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    const acks = () => stdout.split("\n").filter((line) => line === "ack").length;
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code !== 0 && signal !== "SIGKILL") {
        reject(new Error(`tree process failed (${code ?? signal}): ${stderr}\n${stdout}`));
        return;
      }
      resolve({ stdout, acks: acks() });
    });
  });
}

/** Where the kill landed, read from the logs it left. */
type Landing =
  | "before-start"
  | "parent-only"
  | "child-torn"
  | "mid-child"
  | "child-ended"
  | "finished";

async function landing(kind: Kind, dir: string, runId: string): Promise<Landing> {
  const store = openStore(kind, dir);
  try {
    const parent = await store.read(runId).catch(() => [] as StoredEvent[]);
    if (parent.length === 0) return "before-start";
    if (parent.some((event) => event.type === "run-end")) return "finished";
    let torn = false;
    const child = await store.read(childRunId(runId, deskCallId)).catch((error: unknown) => {
      // Killed in the middle of the child's first write: its file holds no complete event.
      torn = (error as { neverStarted?: boolean }).neverStarted === true;
      return [] as StoredEvent[];
    });
    if (torn) return "child-torn";
    if (child.length === 0) return "parent-only";
    return child.some((event) => event.type === "run-end") ? "child-ended" : "mid-child";
  } finally {
    await store.close();
  }
}

/** Checks the resumed tree: one child (the same id), both ended, every effect once, the parent's conversation as uncrashed. */
async function checkTree(
  kind: Kind,
  dir: string,
  runId: string,
  baseline: unknown,
  where: string,
): Promise<void> {
  const childId = childRunId(runId, deskCallId);
  const store = openStore(kind, dir);
  try {
    const runs = (await store.list()).map((summary) => summary.runId).sort();
    expect(runs, `${where}: the tree holds the parent and one child`).toEqual(
      [runId, childId].sort(),
    );
    const parent = await store.read(runId);
    const child = await store.read(childId);
    expect(parent.at(-1), where).toMatchObject({ type: "run-end", status: "completed" });
    expect(child.at(-1), where).toMatchObject({ type: "run-end", status: "completed" });
    expect(
      child.filter((event) => event.type === "run-start"),
      where,
    ).toHaveLength(1);
    expect(child[0], where).toMatchObject({
      type: "run-start",
      agentId: "refunds",
      parent: { runId, callId: deskCallId, rootRunId: runId, depth: 1 },
    });
    // Every child-run-start the parent logged (one per attempt at the call) names the same child.
    const starts = parent.filter((event) => event.type === "child-run-start");
    expect(starts.length, where).toBeGreaterThanOrEqual(1);
    for (const start of starts) expect(start, where).toMatchObject({ childRunId: childId });
    const ends = parent.filter((event) => event.type === "child-run-end");
    expect(ends, where).toHaveLength(1);
    expect(ends[0], where).toMatchObject({ childRunId: childId, status: "completed" });
    // The child ended before the parent went on (its result, then the ticket).
    const endAt = parent.indexOf(ends[0]!);
    const ticketAt = parent.findIndex(
      (event) => event.type === "tool-call-intent" && event.tool === "open_ticket",
    );
    expect(endAt, where).toBeLessThan(ticketAt);
    expect(foldRun(parent).messages, where).toEqual(baseline);
    const entries = fileLedger(join(dir, "ledger.jsonl")).entries();
    expect(
      entries.map((entry) => `${entry.kind} ${entry.key}`).sort(),
      `${where}: every effect of the tree once, under the same child's keys`,
    ).toEqual(
      [
        `email ${childId}:toolu_email`,
        `refund ${childId}:toolu_refund`,
        `ticket ${runId}:toolu_ticket`,
      ].sort(),
    );
  } finally {
    await store.close();
  }
}

describe.each(["jsonl", "sqlite"] as const)(
  "SIGKILL a delegating tree at random moments (%s store), then resume it in a new process",
  (kind) => {
    let root: string;
    let baseline: unknown;
    beforeAll(async () => {
      root = buildForChild();
      writeFileSync(join(root, "tree.mjs"), childSource);
      // The uncrashed tree, in this process: its parent's conversation is what every resumed one must end with.
      const dir = newDir("baseline");
      const store = openStore(kind, dir);
      const ledger = memoryLedger();
      const result = await deskTree({ store, ledger }).run(deskTask, { runId: "run_tree" });
      expect(result.status, result.error).toBe("completed");
      expect(result.answer).toBe(deskAnswer);
      expect(
        ledger
          .entries()
          .map((entry) => entry.kind)
          .sort(),
      ).toEqual(["email", "refund", "ticket"]);
      baseline = foldRun(await store.read("run_tree")).messages;
      await store.close();
    });

    // Only JSONL can tear a first write (the others commit the first event whole).
    it.runIf(kind === "jsonl")(
      "starts a child again whose first write was torn by the kill (its file holds no complete event)",
      async () => {
        // Killed right after the parent's child-run-start is durable: the child has not written yet.
        const dir = newDir("torn");
        const runId = "run_tree_torn";
        await runTree(root, kind, dir, runId, "run", { ack: 5, delayMs: 0 });
        const childId = childRunId(runId, deskCallId);
        const parent = await (async () => {
          const store = openStore(kind, dir);
          try {
            return await store.read(runId);
          } finally {
            await store.close();
          }
        })();
        expect(parent.map((event) => event.type)).toContain("child-run-start");
        // What a kill in the middle of the child's first write leaves: part of its run-start line.
        writeFileSync(
          join(dir, "store", `${childId}.jsonl`),
          `{"seq":0,"type":"run-start","runId":"${childId}","agentId":"refu`,
        );
        const resumed = await runTree(root, kind, dir, runId, "resume");
        expect(resumed.stdout).toContain(`done completed ${JSON.stringify(deskAnswer)}`);
        await checkTree(kind, dir, runId, baseline, "torn child");
      },
    );

    it("resumes the same child, then the parent; every effect of the tree happens once (24 kills)", {
      timeout: 600_000,
    }, async () => {
      const calibrate = newDir("calibrate");
      const uncrashed = await runTree(root, kind, calibrate, "run_tree", "run");
      expect(uncrashed.stdout).toContain(`done completed ${JSON.stringify(deskAnswer)}`);
      await checkTree(kind, calibrate, "run_tree", baseline, "uncrashed");
      // Kill points spread over the whole run: after any of its acknowledged events (or none),
      // plus up to 8 ms (the tools and the model take 3 ms each), so kills land mid-write,
      // mid-call and between them. The process kills itself (a real SIGKILL), so the point does
      // not drift with how fast this process reads its output.
      expect(uncrashed.acks).toBeGreaterThanOrEqual(20);
      const seed = Number(process.env.CRASH_SEED ?? 20261202);
      const next = random(seed);
      const trials = 24;
      // Stratified: trial t kills in the t-th of `trials` equal stretches of the run.
      const kills = Array.from({ length: trials }, (_, trial) => ({
        ack: Math.floor(((trial + next()) * (uncrashed.acks + 1)) / trials),
        delayMs: Math.floor(next() * 8),
      }));
      const landed: Record<Landing, number> = {
        "before-start": 0,
        "parent-only": 0,
        "child-torn": 0,
        "mid-child": 0,
        "child-ended": 0,
        finished: 0,
      };
      let cursor = 0;
      const worker = async () => {
        while (cursor < trials) {
          const trial = cursor;
          cursor += 1;
          const dir = newDir("kill");
          const runId = `run_tree_${trial}`;
          const where = `${kind} trial ${trial} (seed ${seed}, killed ${kills[trial]!.delayMs} ms after ack ${kills[trial]!.ack})`;
          await runTree(root, kind, dir, runId, "run", kills[trial]);
          const where2 = await landing(kind, dir, runId);
          landed[where2] += 1;
          const resumed = await runTree(root, kind, dir, runId, "resume");
          if (where2 === "before-start") {
            // Nothing was logged: nothing to resume, and nothing happened.
            expect(resumed.stdout, where).toMatch(/threw (run_not_found|corrupt_log) /);
            expect(fileLedger(join(dir, "ledger.jsonl")).entries(), where).toEqual([]);
            continue;
          }
          expect(resumed.stdout, `${where} (${where2})`).toContain(
            `done completed ${JSON.stringify(deskAnswer)}`,
          );
          await checkTree(kind, dir, runId, baseline, `${where} (${where2})`);
        }
      };
      await Promise.all([worker(), worker(), worker()]);
      console.log(`[delegation crash] ${kind}: kills landed ${JSON.stringify(landed)}`);
      // The child's events are about half of the tree's: many kills land while it runs.
      expect(landed["mid-child"], JSON.stringify(landed)).toBeGreaterThanOrEqual(6);
    });
  },
);
