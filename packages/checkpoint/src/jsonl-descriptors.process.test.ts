/**
 * The JSONL store under a descriptor limit: thousands of concurrent runs in a child process
 * started under `ulimit -n 1024` all complete, the store never opens more than its cap, and no
 * run is left `running`. Figures go to the log (the bench prints more: bench/many-runs.mjs).
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { buildForChild } from "./__fixtures__/build-for-child.js";

interface ManyRuns {
  runs: number;
  byOutcome: Record<string, number>;
  running: number;
  descriptors: { baseline: number; peak: number; cap?: number; peakHeld?: number };
  rssMb: number;
  eventLoopDelayMs: { p99: number; max: number };
  durationMs: number;
  latencyMs: { p50: number; p99: number };
}

/** Where the logs go: tmpfs when there is one (this test is about descriptors, not the disk). */
const scratch = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();

function manyRuns(
  root: string,
  runs: number,
  limit: number,
  withTool: boolean,
  kind: "jsonl" | "sqlite" = "jsonl",
): Promise<ManyRuns> {
  const dir = mkdtempSync(join(scratch, "lg-descriptors-"));
  const store = pathToFileURL(join(root, `checkpoint/${kind}-event-store.js`)).href;
  return new Promise((resolve, reject) => {
    const child = spawn(
      "/bin/sh",
      [
        "-c",
        `ulimit -n ${limit} && exec "$0" "$@"`,
        process.execPath,
        join(root, "many-runs.mjs"),
        store,
        dir,
        String(runs),
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, MANY_RUNS_TOOL: withTool ? "1" : "0", MANY_RUNS_STORE: kind },
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`the child failed (${code}): ${stderr}`));
      else resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as ManyRuns);
    });
  });
}

describe.skipIf(process.platform === "win32")("jsonlEventStore under ulimit -n 1024", () => {
  let root: string;
  beforeAll(() => {
    root = buildForChild();
    copyFileSync(
      join(import.meta.dirname, "__fixtures__/many-runs.mjs"),
      join(root, "many-runs.mjs"),
    );
  }, 120_000);

  // 1,000 runs with a tool call each (three appends and seven events per run); 10,000 runs
  // that answer at once (two appends), to keep the suite's time in bounds on two cores.
  for (const [runs, withTool] of [
    [1_000, true],
    [10_000, false],
  ] as const) {
    it(`completes ${runs.toLocaleString("en")} concurrent runs${withTool ? " with a tool call each" : ""} within its descriptor cap, none left running`, {
      timeout: 600_000,
    }, async () => {
      const result = await manyRuns(root, runs, 1024, withTool);
      console.log(`[descriptors] ${runs} runs at ulimit -n 1024: ${JSON.stringify(result)}`);
      expect(result.byOutcome).toEqual({ completed: runs });
      expect(result.running).toBe(0);
      expect(result.descriptors.cap).toBe(512);
      // Descriptors the process held beyond those it had before the runs stay within the cap.
      if (result.descriptors.peak >= 0)
        expect(result.descriptors.peak - result.descriptors.baseline).toBeLessThanOrEqual(
          result.descriptors.cap!,
        );
    });
  }

  it("sqlite: completes 10,000 concurrent runs, group-committed, none left running", {
    timeout: 600_000,
  }, async () => {
    const result = await manyRuns(root, 10_000, 1024, false, "sqlite");
    console.log(`[descriptors] 10000 sqlite runs at ulimit -n 1024: ${JSON.stringify(result)}`);
    expect(result.byOutcome).toEqual({ completed: 10_000 });
    expect(result.running).toBe(0);
    // Two database connections (reads, and the writer thread's) and the thread's own event
    // loop: a fixed handful of descriptors, flat however many runs there are.
    if (result.descriptors.peak >= 0)
      expect(result.descriptors.peak - result.descriptors.baseline).toBeLessThanOrEqual(16);
  });
});
