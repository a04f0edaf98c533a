/**
 * Delegation trees on worker processes that die: three worker processes (compiled JS) run three
 * trees (a lead calls 3 managers at once, each calls 2 leaves at once: 10 runs a tree, each child
 * a pg-boss job of its own); the suite SIGKILLs a worker while it holds a child run's slice and
 * starts a replacement. Every run must end once, every leaf's charge happen once, and the claim
 * of the killed slice pass to another worker after the lease (fencing per run: the parent's
 * claim is untouched).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { childRunId } from "@loopguard/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PostgresEventStore, postgresEventStore } from "../../src/postgres-event-store.js";
import { submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";
// @ts-expect-error: a plain .mjs fixture shared with the child processes
import { createSideEffectTables } from "./fixtures/agent.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../../..");
const LEASE_MS = 3_000;

interface Line {
  worker: string;
  event: string;
  runId?: string;
  outcome?: string;
  status?: string;
}

describe.skipIf(!databaseUrl)("delegation trees on worker processes, through SIGKILL", () => {
  const schema = freshSchema("lg_tree_kill");
  const lines: Line[] = [];
  const children = new Map<string, ChildProcess>();
  let store: PostgresEventStore;
  let count = 0;

  const spawnWorker = async (): Promise<string> => {
    count += 1;
    const name = `w${count}`;
    const child = spawn(process.execPath, [resolve(here, "fixtures/worker-process.mjs")], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        LG_SCHEMA: schema,
        WORKER_NAME: name,
        TREE: "1",
        LEASE_MS: String(LEASE_MS),
        SLICE_MS: "1000",
        STEP_DELAY_MS: "300",
        CONCURRENCY: "2",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.set(name, child);
    await new Promise<void>((resolveReady, reject) => {
      child.once("exit", (code) => reject(new Error(`worker ${name} exited with ${code}`)));
      createInterface({ input: child.stdout! }).on("line", (text) => {
        try {
          const line = JSON.parse(text) as Line;
          lines.push(line);
          if (line.event === "ready") resolveReady();
        } catch {
          // not a report line
        }
      });
    });
    return name;
  };

  /** Child runs a worker has claimed and not yet reported a slice for. */
  const childrenInFlight = (name: string): string[] => {
    const open = new Map<string, number>();
    for (const line of lines) {
      if (line.worker !== name || !line.runId?.includes(".c")) continue;
      if (line.event === "claim") open.set(line.runId, (open.get(line.runId) ?? 0) + 1);
      if (line.event === "slice") open.set(line.runId, (open.get(line.runId) ?? 1) - 1);
    }
    return [...open].filter(([, n]) => n > 0).map(([runId]) => runId);
  };

  const waitFor = async (what: string, test: () => boolean | Promise<boolean>, ms: number) => {
    const deadline = Date.now() + ms;
    while (!(await test())) {
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  };

  beforeAll(async () => {
    execFileSync("npx", ["tsc", "-p", "packages/core/tsconfig.build.json"], {
      cwd: repo,
      stdio: "inherit",
    });
    execFileSync("npx", ["tsc", "-p", "packages/checkpoint/test/pg/tsconfig.workers.json"], {
      cwd: repo,
      stdio: "inherit",
    });
    store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
    await store.migrate();
    await createSideEffectTables(await store.pool(), schema);
  }, 300_000);

  afterAll(async () => {
    for (const child of children.values())
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await store?.close();
    await dropSchema(schema);
    await dropSchema(`${schema}_boss`);
  });

  it("ends every run of three trees once and charges every leaf once, with a worker killed mid-child", async () => {
    await Promise.all([spawnWorker(), spawnWorker(), spawnWorker()]);
    const roots = ["tree-a", "tree-b", "tree-c"];
    for (const runId of roots)
      await submitRun({ store, leaseMs: LEASE_MS }, `Run project ${runId}.`, { runId });

    // SIGKILL a worker while it holds a child run's slice; start a replacement.
    await waitFor(
      "a worker with a child run in flight",
      () => ["w1", "w2", "w3"].some((name) => childrenInFlight(name).length > 0),
      60_000,
    );
    const victim = ["w1", "w2", "w3"].find((name) => childrenInFlight(name).length > 0)!;
    const killed = childrenInFlight(victim);
    children.get(victim)!.kill("SIGKILL");
    await spawnWorker();

    const runsOf = (root: string) => {
      const managers = [0, 1, 2].map((index) => childRunId(root, `toolu_lead_${index}`));
      const leaves = managers.flatMap((manager) =>
        [0, 1].map((index) => childRunId(manager, `toolu_manager_${index}`)),
      );
      return { managers, leaves, all: [root, ...managers, ...leaves] };
    };
    await waitFor(
      "every tree to end",
      async () => {
        for (const root of roots) {
          const events = await store.read(root);
          if (events.at(-1)?.type !== "run-end") return false;
        }
        return true;
      },
      300_000,
    );
    for (const child of children.values())
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");

    const pool = await store.pool();
    for (const root of roots) {
      const { leaves, all } = runsOf(root);
      for (const runId of all) {
        const events = await store.read(runId);
        expect(
          events.filter((event) => event.type === "run-start"),
          runId,
        ).toHaveLength(1);
        expect(
          events.filter((event) => event.type === "run-end"),
          runId,
        ).toHaveLength(1);
        expect(events.at(-1), runId).toMatchObject({ type: "run-end", status: "completed" });
      }
      const { rows } = await pool.query(
        `SELECT key FROM "${schema}".side_effects WHERE run_id LIKE $1 ORDER BY key`,
        [`${root}.%`],
      );
      expect(
        rows.map((row) => (row as { key: string }).key),
        root,
      ).toEqual(leaves.map((leaf) => `${leaf}:toolu_leaf_0`).sort());
    }
    // The killed slices' runs were claimed again by another worker and ended.
    for (const runId of killed)
      expect(
        lines.some(
          (line) =>
            line.event === "slice" &&
            line.runId === runId &&
            line.worker !== victim &&
            ["ended", "parked", "paused"].includes(line.outcome ?? ""),
        ),
        runId,
      ).toBe(true);
    const { rows: attempts } = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".attempts`,
    );
    console.log(
      `[worker trees] killed ${victim} holding ${killed.join(", ")}; charges attempted ${(attempts[0] as { n: number }).n} for 18 leaves`,
    );
  }, 600_000);
});
