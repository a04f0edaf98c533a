/**
 * One budget for a tree, through crashes: a three-level tree of 50 child runs (a root calls 5
 * managers at once, each calls 9 workers at once) runs in a real node process on a JSONL store
 * under the root's `maxUsd`, which binds (the tree would cost about three times as much). The
 * process SIGKILLs itself at random points of the run, a new process resumes the root, and so
 * on, 100 kills in all: after every kill, and at the end, what every run of the tree may have
 * been billed (responses, retries, errors, and the worst case of each call in flight when the
 * process died) never exceeds the cap.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childRunId, type StoredEvent } from "@loopguard/core";
import { beforeAll, describe, expect, it } from "vitest";
import { billedUsd, budgetTree, treeCapUsd, treeShape } from "./__fixtures__/budget-tree.js";
import { buildForChild } from "./__fixtures__/build-for-child.js";
import { jsonlEventStore } from "./jsonl-event-store.js";

const childSource = `
import { jsonlEventStore } from "./checkpoint/jsonl-event-store.js";
import { budgetTree } from "./checkpoint/__fixtures__/budget-tree.js";
const [dir, runId, mode, killAck, killDelayMs] = process.argv.slice(2);
// With a kill point, the process SIGKILLs itself killDelayMs after its killAck-th durable event
// (0: at once): a point of the run, not of the clock.
let acks = 0;
const kill = () => setTimeout(() => process.kill(process.pid, "SIGKILL"), Number(killDelayMs));
const store = jsonlEventStore({ dir });
const onEvent = () => {
  acks += 1;
  if (killAck !== undefined && acks === Number(killAck)) kill();
};
const agent = budgetTree(store, { delayMs: 2, onEvent });
if (killAck === "0") kill();
try {
  const result = mode === "run" ? await agent.run("Do the project.", { runId }) : await agent.resume(runId);
  process.stdout.write("done " + result.status + " " + result.costUsd + " " + JSON.stringify(result.error ?? "") + "\\n");
} catch (error) {
  process.stdout.write("threw " + (error.code ?? "") + " " + JSON.stringify(String(error.message)) + "\\n");
}
await store.close();
process.stdout.write("acks " + acks + "\\n");
`;

/** A seeded generator, so a failing case can be replayed. */
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
  killed: boolean;
}

/** Runs (or resumes) the tree in a new process, which SIGKILLs itself at `kill` if it gets there. */
function runTree(
  root: string,
  dir: string,
  runId: string,
  mode: "run" | "resume",
  kill?: { ack: number; delayMs: number },
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [
        join(root, "budget-tree.mjs"),
        dir,
        runId,
        mode,
        ...(kill ? [String(kill.ack), String(kill.delayMs)] : []),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
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
      resolve({ stdout, killed: signal === "SIGKILL" });
    });
  });
}

/** Every run of the tree as its log stands. */
async function readTree(dir: string): Promise<Map<string, StoredEvent[]>> {
  const store = jsonlEventStore({ dir });
  try {
    const logs = new Map<string, StoredEvent[]>();
    for (const summary of await store.list({ limit: 1_000 }))
      logs.set(summary.runId, await store.read(summary.runId));
    return logs;
  } finally {
    await store.close();
  }
}

const treeBilled = (logs: Map<string, StoredEvent[]>) =>
  [...logs.values()].reduce((sum, events) => sum + billedUsd(events), 0);

const treeEvents = (logs: Map<string, StoredEvent[]>) =>
  [...logs.values()].reduce((sum, events) => sum + events.length, 0);

// It failed before core counted a started child at its caps until its log is open again, and
// every unanswered request that was sent again (seen: $0.3046 and $0.308 of a $0.30 cap).
describe("one budget for a tree of 50 children through 100 SIGKILLs (JSONL store, real processes)", () => {
  let root: string;
  let uncrashedEvents: number;
  beforeAll(async () => {
    root = buildForChild();
    writeFileSync(join(root, "budget-tree.mjs"), childSource);
    // The cap binds: without it the tree costs far more (in process, on a memory-backed JSONL dir).
    const dir = mkdtempSync(join(tmpdir(), "lg-budget-free-"));
    const store = jsonlEventStore({ dir });
    const free = await budgetTree(store, { capUsd: 100 }).run("Do the project.", {
      runId: "run_free",
    });
    await store.close();
    expect(free.status).toBe("completed");
    expect(free.costUsd).toBeGreaterThan(2.5 * treeCapUsd);
    expect((await readTree(dir)).size).toBe(
      1 + treeShape.managers * (1 + treeShape.workersPerManager),
    );
    // The capped tree, uncrashed: how many events it writes (kill points are drawn among them).
    const cappedDir = mkdtempSync(join(tmpdir(), "lg-budget-capped-"));
    const capped = jsonlEventStore({ dir: cappedDir });
    const result = await budgetTree(capped).run("Do the project.", { runId: "run_capped" });
    await capped.close();
    expect(result.costUsd).toBeLessThanOrEqual(treeCapUsd);
    uncrashedEvents = treeEvents(await readTree(cappedDir));
  });

  it("never bills the tree past the root's maxUsd, after any kill or at the end", {
    timeout: 900_000,
  }, async () => {
    const seed = Number(process.env.CRASH_SEED ?? 20261202);
    const next = random(seed);
    const target = 100;
    const killsPerCase = 4;
    let kills = 0;
    let cases = 0;
    let highest = 0;
    const finals: string[] = [];
    const runCase = async () => {
      const index = cases++;
      const dir = mkdtempSync(join(tmpdir(), "lg-budget-kill-"));
      const runId = `run_budget_${index}`;
      let mode: "run" | "resume" = "run";
      let caseKills = 0;
      for (let attempt = 0; attempt < killsPerCase + 2 && caseKills < killsPerCase; attempt++) {
        if (kills >= target) break;
        const written = treeEvents(await readTree(dir));
        // Anywhere in what is left of the run (the resumed run writes about what is missing).
        const left = Math.max(1, uncrashedEvents - written);
        const kill = { ack: Math.floor(next() * left), delayMs: Math.floor(next() * 6) };
        const where = `case ${index} (seed ${seed}, ${dir}) attempt ${attempt}: ${mode}, kill at ack ${kill.ack}+${kill.delayMs} ms`;
        const outcome = await runTree(root, dir, runId, mode, kill);
        const logs = await readTree(dir);
        const billed = treeBilled(logs);
        highest = Math.max(highest, billed);
        expect(billed, `${where}: the tree billed past its cap`).toBeLessThanOrEqual(
          treeCapUsd + 1e-9,
        );
        if (logs.has(runId)) mode = "resume";
        if (!outcome.killed) break;
        kills += 1;
        caseKills += 1;
      }
      // The last process runs to the end.
      const final = await runTree(root, dir, runId, mode);
      expect(final.killed).toBe(false);
      const logs = await readTree(dir);
      const where = `case ${index} (seed ${seed}) at the end`;
      expect(final.stdout, where).toMatch(/^done (completed|stopped) /m);
      const billed = treeBilled(logs);
      highest = Math.max(highest, billed);
      expect(billed, `${where}: the tree billed past its cap`).toBeLessThanOrEqual(
        treeCapUsd + 1e-9,
      );
      // One tree: every run ended, each child at most once (ids derived from parent and call).
      expect(logs.size, where).toBeLessThanOrEqual(51);
      for (const [runIdOfLog, events] of logs) {
        expect(events.at(-1)?.type, `${where}: ${runIdOfLog} did not end`).toBe("run-end");
        const start = events[0];
        if (runIdOfLog !== runId && start?.type === "run-start") {
          expect(start.parent, where).toBeDefined();
          expect(childRunId(start.parent!.runId, start.parent!.callId)).toBe(runIdOfLog);
        }
      }
      finals.push(final.stdout.split("\n")[0]!);
    };
    const worker = async () => {
      while (kills < target && cases < 60) await runCase();
    };
    await Promise.all([worker(), worker(), worker()]);
    console.log(
      `[budget tree] ${kills} kills over ${cases} cases (seed ${seed}); highest billed $${highest.toFixed(4)} of cap $${treeCapUsd}; ends: ${JSON.stringify(
        finals.reduce<Record<string, number>>((counts, line) => {
          const status = line.split(" ")[1] ?? line;
          counts[status] = (counts[status] ?? 0) + 1;
          return counts;
        }, {}),
      )}`,
    );
    expect(kills).toBeGreaterThanOrEqual(target);
    // The cap was reached, not merely respected by a tree that stayed small.
    expect(highest).toBeGreaterThan(0.8 * treeCapUsd);
  });
});
