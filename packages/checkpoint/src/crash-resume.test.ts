import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventStore, Message, StoredEvent } from "@loopguard/core";
import { createAgent, LoopguardError } from "@loopguard/core";
import { foldRun } from "@loopguard/core/plugin";
import { scriptedModel } from "@loopguard/core/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { buildForChild } from "./__fixtures__/build-for-child.js";
import {
  fileLedger,
  type Ledger,
  memoryLedger,
  supportDeskAnswer,
  supportDeskScript,
  supportDeskTask,
  supportDeskTools,
} from "./__fixtures__/support-desk.js";
import { jsonlEventStore } from "./jsonl-event-store.js";

const newDir = (label: string) => mkdtempSync(join(tmpdir(), `lg-crash-${label}-`));

/** What an uncrashed run ends with. */
interface Baseline {
  events: number;
  /** `type:step` of each event of the uncrashed run. */
  kinds: string[];
  appends: number;
  messages: Message[];
  lastRequest: Message[];
}

function agentOn(store: EventStore, ledger: Ledger) {
  const model = scriptedModel(supportDeskScript());
  const agent = createAgent({ model, tools: supportDeskTools(ledger), store });
  return { agent, model };
}

/** Counts appends, so the crash plans can name every boundary of a run. */
function countingStore(inner: EventStore): EventStore & { appends: number } {
  const counting = {
    name: inner.name,
    appends: 0,
    async append(...args: Parameters<EventStore["append"]>) {
      counting.appends += 1;
      return inner.append(...args);
    },
    read: (runId: string) => inner.read(runId),
    list: (...args: Parameters<EventStore["list"]>) => inner.list(...args),
  };
  return counting;
}

/**
 * A store that "kills the process" at a planned point: with `before`, exactly `events` events
 * reach the log (a batch that crosses the boundary is written in part, as a torn group commit
 * would leave it); with `after`, append number `append` is written in full, as when a process
 * dies after its fsync but before it acted. From there on no append settles, as nothing runs
 * after a crash: the agent is frozen where it was and abandoned; or, with `throws`, every
 * append rejects, as a store that fails does (the run must stop before acting).
 */
function crashingStore(
  inner: EventStore,
  plan: ({ mode: "before"; events: number } | { mode: "after"; append: number }) & {
    throws?: boolean;
  },
): EventStore & { crashed: Promise<void> } {
  let appended = 0;
  let appends = 0;
  let dead = false;
  let died = () => {};
  const crashed = new Promise<void>((resolve) => {
    died = resolve;
  });
  const freeze = () => {
    dead = true;
    died();
    if (plan.throws) return Promise.reject(new Error("simulated crash: the store failed here"));
    return new Promise<never>(() => {});
  };
  return {
    name: `crashing-${inner.name}`,
    crashed,
    async append(runId, events, options) {
      if (dead) return freeze();
      appends += 1;
      if (plan.mode === "before" && appended + events.length > plan.events) {
        const keep = plan.events - appended;
        if (keep > 0) await inner.append(runId, events.slice(0, keep), options);
        return freeze();
      }
      const result = await inner.append(runId, events, options);
      appended += events.length;
      if (plan.mode === "after" && appends === plan.append) return freeze();
      return result;
    },
    read: (runId) => inner.read(runId),
    list: (filter) => inner.list(filter),
  };
}

/** Runs the workload on a crashing store until it dies, and lets work in flight settle. */
async function runUntilCrash(
  dir: string,
  runId: string,
  ledger: Ledger,
  plan: Parameters<typeof crashingStore>[1],
): Promise<void> {
  // The "dead" store gives its run's lock back 5 ms after its last write, where a real crash
  // leaves a lock file that the next writer breaks (tested with real processes below).
  const store = crashingStore(jsonlEventStore({ dir, lockIdleMs: 5 }), plan);
  const { agent } = agentOn(store, ledger);
  const finished = agent.run(supportDeskTask, { runId });
  if (plan.throws) {
    // A store that fails stops the run: it never completes, and it says why.
    const result = await finished.catch((error: unknown) => error as Error);
    if (result instanceof Error) expect(result.message).toContain("simulated crash");
    else {
      expect(result.status).toBe("failed");
      expect(result.error).toContain("simulated crash");
    }
  } else await Promise.race([store.crashed, finished]);
  await new Promise((resolve) => setTimeout(resolve, 15));
  // Log before action: every side effect that happened has its intent in the log.
  const events = await jsonlEventStore({ dir }).read(runId);
  const intents = new Set(
    events.flatMap((event) => (event.type === "tool-call-intent" ? [event.idempotencyKey] : [])),
  );
  for (const entry of ledger.entries())
    expect(intents.has(entry.key), `effect ${entry.key} has no intent in the log`).toBe(true);
}

const effects = (ledger: Ledger) => {
  const entries = ledger.entries();
  return {
    refunds: entries.filter((entry) => entry.kind === "refund").length,
    emails: entries.filter((entry) => entry.kind === "email").length,
    distinctKeys: new Set(entries.map((entry) => entry.key)).size,
    total: entries.length,
  };
};

async function runBaseline(): Promise<Baseline> {
  const store = countingStore(jsonlEventStore({ dir: newDir("baseline") }));
  const ledger = memoryLedger();
  const { agent, model } = agentOn(store, ledger);
  const result = await agent.run(supportDeskTask, { runId: "run_baseline" });
  expect(result.status).toBe("completed");
  expect(result.answer).toBe(supportDeskAnswer);
  expect(effects(ledger)).toEqual({ refunds: 1, emails: 1, distinctKeys: 2, total: 2 });
  const events = await store.read("run_baseline");
  return {
    events: events.length,
    kinds: events.map((event) => `${event.type}:${"step" in event ? event.step : ""}`),
    appends: store.appends,
    messages: foldRun(events).messages,
    lastRequest: model.requests.at(-1)!.messages,
  };
}

/** Resumes a crashed run in a fresh agent and checks it ends exactly as the uncrashed one. */
async function resumeAndCheck(
  dir: string,
  runId: string,
  ledger: Ledger,
  baseline: Baseline,
  where: string,
): Promise<"resumed" | "never-started"> {
  const store = jsonlEventStore({ dir });
  try {
    // A crash during the run's first write leaves no file, or a file with no complete event:
    // the latter is said plainly (corrupt_log, "holds no complete event"), never "not found".
    let emptyFile = false;
    const before = await store.read(runId).catch((error: unknown) => {
      if (!/holds no complete event/.test((error as Error).message)) throw error;
      emptyFile = true;
      return [];
    });
    const { agent, model } = agentOn(store, ledger);
    if (before.length === 0) {
      const error = await agent.resume(runId).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(LoopguardError.isInstance(error) && (error as LoopguardError).code, where).toBe(
        emptyFile ? "corrupt_log" : "run_not_found",
      );
      expect(effects(ledger).total, where).toBe(0);
      return "never-started";
    }
    const result = await agent.resume(runId);
    expect(result.status, `${where}: ${result.error ?? ""}`).toBe("completed");
    expect(result.answer, where).toBe(supportDeskAnswer);
    expect(effects(ledger), where).toEqual({ refunds: 1, emails: 1, distinctKeys: 2, total: 2 });
    const after = await store.read(runId);
    expect(after.slice(0, before.length), `${where}: resume rewrote the log`).toEqual(before);
    expect(foldRun(after).messages, where).toEqual(baseline.messages);
    if (model.requests.length > 0)
      expect(model.requests.at(-1)!.messages, where).toEqual(baseline.lastRequest);
    else {
      // The model is not asked again when its final answer was already logged.
      const last = before.filter((event) => event.type === "model-response").at(-1);
      expect(
        last?.type === "model-response" && last.response.stop_reason,
        `${where}: resumed without calling the model before the final answer was logged`,
      ).toBe("end_turn");
    }
    return "resumed";
  } finally {
    await store.close();
  }
}

describe("crash and resume at every event boundary (in process)", () => {
  let baseline: Baseline;
  beforeAll(async () => {
    baseline = await runBaseline();
  });

  it("ends every crashed run exactly as the uncrashed one: same conversation, same answer, one refund, one email", async () => {
    expect(baseline.events).toBeGreaterThanOrEqual(12);
    const outcomes: string[] = [];
    const plans = [
      ...Array.from({ length: baseline.events + 1 }, (_, events) => ({
        mode: "before" as const,
        events,
      })),
      ...Array.from({ length: baseline.appends }, (_, index) => ({
        mode: "after" as const,
        append: index + 1,
      })),
    ];
    for (const plan of plans) {
      const where =
        plan.mode === "before"
          ? `crash with ${plan.events} events written`
          : `crash right after append ${plan.append}`;
      const dir = newDir("boundary");
      const ledger = memoryLedger();
      const runId = "run_boundary";
      await runUntilCrash(dir, runId, ledger, plan);
      outcomes.push(await resumeAndCheck(dir, runId, ledger, baseline, where));
    }
    expect(outcomes.filter((outcome) => outcome === "never-started")).toHaveLength(1);
    expect(outcomes.length).toBe(baseline.events + 1 + baseline.appends);
  });

  it("also when the store throws at the crash point: the run stops, then resumes to the same end", async () => {
    const plans = [
      ...Array.from({ length: baseline.events }, (_, events) => ({
        mode: "before" as const,
        events,
        throws: true,
      })),
      ...Array.from({ length: baseline.appends - 1 }, (_, index) => ({
        mode: "after" as const,
        append: index + 1,
        throws: true,
      })),
    ];
    for (const plan of plans) {
      const where =
        plan.mode === "before"
          ? `store threw with ${plan.events} events written`
          : `store threw right after append ${plan.append}`;
      const dir = newDir("throws");
      const ledger = memoryLedger();
      await runUntilCrash(dir, "run_throws", ledger, plan);
      await resumeAndCheck(dir, "run_throws", ledger, baseline, where);
    }
  });

  it("resumes a run twice in a row without a second effect", async () => {
    const dir = newDir("twice");
    const ledger = memoryLedger();
    await runUntilCrash(dir, "run_twice", ledger, { mode: "before", events: 9 });
    await resumeAndCheck(dir, "run_twice", ledger, baseline, "first resume");
    await resumeAndCheck(dir, "run_twice", ledger, baseline, "second resume");
  });
});

const childSource = `
import { createAgent } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { jsonlEventStore } from "./checkpoint/jsonl-event-store.js";
import { fileLedger, supportDeskScript, supportDeskTask, supportDeskTools } from "./checkpoint/__fixtures__/support-desk.js";
const [dir, ledgerPath, runId, delayMs] = process.argv.slice(2);
const agent = createAgent({
  model: scriptedModel(supportDeskScript({ delayMs: Number(delayMs) })),
  tools: supportDeskTools(fileLedger(ledgerPath), { delayMs: Number(delayMs) }),
  store: jsonlEventStore({ dir }),
  // Called once the event's append resolved (it is durable): the parent checks none is lost.
  onEvent: (event) => process.stdout.write("ack " + event.seq + " " + event.type + "\\n"),
});
process.stdout.write("ready\\n");
const result = await agent.run(supportDeskTask, { runId });
process.stdout.write("done " + result.status + "\\n");
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

interface Trial {
  acked: Array<{ seq: number; type: string }>;
  finished: boolean;
  elapsedMs: number;
}

/** Runs the child; kills it with SIGKILL `killAfterMs` after it is ready (never, when undefined). */
function runChild(
  root: string,
  dir: string,
  ledgerPath: string,
  runId: string,
  killAfterMs: number | undefined,
): Promise<Trial> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [join(root, "child.mjs"), dir, ledgerPath, runId, "3"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    let readyAt = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      if (readyAt === 0 && stdout.includes("ready\n")) {
        readyAt = performance.now();
        if (killAfterMs !== undefined) timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0 && signal !== "SIGKILL") {
        reject(new Error(`child failed (${code ?? signal}): ${stderr}`));
        return;
      }
      const acked = stdout
        .split("\n")
        .filter((line) => line.startsWith("ack "))
        .map((line) => {
          const [, seq, type] = line.split(" ");
          return { seq: Number(seq), type: type! };
        });
      resolve({
        acked,
        finished: stdout.includes("done completed\n"),
        elapsedMs: readyAt === 0 ? 0 : performance.now() - readyAt,
      });
    });
  });
}

describe("SIGKILL a real process at random moments, then resume", () => {
  let root: string;
  let baseline: Baseline;
  beforeAll(async () => {
    root = buildForChild();
    writeFileSync(join(root, "child.mjs"), childSource);
    baseline = await runBaseline();
  });

  it("loses no acknowledged event, repeats no side effect and leaves every log readable (56 trials)", {
    timeout: 600_000,
  }, async () => {
    // Calibrate: how long an uncrashed child takes from ready to exit on this machine (the
    // faster of two runs, so a slow first start does not push most kills past the end).
    const elapsed: number[] = [];
    for (const label of ["a", "b"]) {
      const dir = newDir(`calibrate-${label}`);
      const calibration = await runChild(
        root,
        dir,
        join(dir, "ledger.jsonl"),
        "run_calibrate",
        undefined,
      );
      expect(calibration.finished).toBe(true);
      expect(calibration.acked.map((event) => event.seq)).toEqual([
        ...Array(baseline.events).keys(),
      ]);
      elapsed.push(calibration.elapsedMs);
    }
    // A little past the end, so some kills land after the run finished.
    const windowMs = Math.max(20, Math.min(...elapsed) * 1.15);
    const seed = Number(process.env.CRASH_SEED ?? 20261130);
    const next = random(seed);
    const trials = 56;
    const kills = Array.from({ length: trials }, () => Math.floor(next() * windowMs));
    const outcomes = { midRun: 0, finished: 0, neverStarted: 0 };
    let cursor = 0;
    const worker = async () => {
      while (cursor < trials) {
        const trial = cursor;
        cursor += 1;
        const dir = newDir("kill");
        const ledgerPath = join(dir, "ledger.jsonl");
        const runId = `run_kill_${trial}`;
        const where = `trial ${trial} (seed ${seed}, killed ${kills[trial]} ms after ready)`;
        const outcome = await runChild(root, dir, ledgerPath, runId, kills[trial]);
        // No unreadable log: read() throws on any damaged line. A kill during the run's first
        // write may leave a file with no complete event: read says so (and nothing was acked).
        const store = jsonlEventStore({ dir });
        const events: StoredEvent[] = await store.read(runId).catch((error: unknown) => {
          if (!/holds no complete event/.test((error as Error).message)) throw error;
          expect(outcome.acked, `${where}: an acknowledged event is missing`).toEqual([]);
          return [];
        });
        await store.close();
        // No lost event: everything the child saw acknowledged is in the log, in place.
        for (const acked of outcome.acked)
          expect(events[acked.seq]?.type, `${where}: acknowledged event ${acked.seq} lost`).toBe(
            acked.type,
          );
        const ledger = fileLedger(ledgerPath);
        const ended = events.some((event) => event.type === "run-end");
        const result = await resumeAndCheck(dir, runId, ledger, baseline, where);
        if (result === "never-started") outcomes.neverStarted += 1;
        else if (ended) outcomes.finished += 1;
        else outcomes.midRun += 1;
      }
    };
    await Promise.all([worker(), worker(), worker()]);
    expect(outcomes.midRun + outcomes.finished + outcomes.neverStarted).toBe(trials);
    // The kills are spread over the run: most land in the middle of it.
    expect(outcomes.midRun, JSON.stringify(outcomes)).toBeGreaterThanOrEqual(10);
  });
});
