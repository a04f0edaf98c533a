/**
 * A tenant's day across worker processes: 4 workers run one tenant's runs with tenantBudget
 * on postgresLimitStore while the test SIGKILLs some (and starts replacements) and SIGSTOPs
 * others past their lease, at points fast-check picks. Every run ends (none lost: taken over
 * after a crash), the USD its log records never adds up past the tenant's cap, and the store's
 * count (settled plus held) never exceeds it either.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { foldRun } from "@loopguard/core/plugin";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresEventStore } from "../../src/postgres-event-store.js";
import { postgresLimitStore } from "../../src/postgres-limit-store.js";
import { submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../../..");
const RUNS = 12;
const MAX_USD = 0.5;
const debugLines: string[] = [];

describe.skipIf(!databaseUrl)("a tenant's day across worker processes (SIGKILL, SIGSTOP)", () => {
  const schemas: string[] = [];
  beforeAll(() => {
    // Children run compiled JS: core, policy (tenantBudget) and this package's workers and store.
    for (const project of [
      "packages/core/tsconfig.build.json",
      "packages/policy/tsconfig.build.json",
      "packages/checkpoint/test/pg/tsconfig.workers.json",
      "packages/checkpoint/test/pg/tsconfig.limits.json",
    ])
      execFileSync("npx", ["tsc", "-p", project], { cwd: repo, stdio: "inherit" });
  }, 120_000);
  afterAll(async () => {
    for (const schema of schemas) {
      await dropSchema(schema);
      await dropSchema(`${schema}_boss`);
    }
  });

  const spawnWorker = (schema: string) => {
    const child = spawn(process.execPath, [resolve(here, "fixtures/budget-worker.mjs")], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        LG_SCHEMA: schema,
        MAX_USD: String(MAX_USD),
        STEPS: "5",
        STEP_MS: "250",
        OUTPUT_TOKENS: "1500",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const ready = new Promise<void>((resolveReady) => {
      createInterface({ input: child.stdout! }).on("line", (text) => {
        if (process.env.DEBUG_LIMITS === "1") debugLines.push(text);
        if (text.includes('"ready"')) resolveReady();
      });
      child.once("exit", () => resolveReady());
    });
    return { child, ready };
  };

  it("property: every run ends and the tenant's spend never exceeds its cap", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            atMs: fc.integer({ min: 100, max: 2_000 }),
            worker: fc.integer({ min: 0, max: 3 }),
            signal: fc.constantFrom("SIGKILL", "SIGSTOP"),
          }),
          { minLength: 1, maxLength: 3 },
        ),
        async (faults) => {
          const schema = freshSchema("lg_tenant_fleet");
          schemas.push(schema);
          const store = postgresEventStore({ connectionString: databaseUrl!, schema, max: 4 });
          await store.migrate();
          const workers: Array<{ child: ChildProcess; ready: Promise<void> }> = [];
          try {
            for (let index = 0; index < RUNS; index += 1)
              await submitRun({ store, leaseMs: 2_000 }, `work ${index}`, {
                runId: `r${index}`,
                tenant: "acme",
              });
            for (let index = 0; index < 4; index += 1) workers.push(spawnWorker(schema));
            await Promise.all(workers.map((worker) => worker.ready));
            const started = Date.now();
            for (const fault of [...faults].sort((a, b) => a.atMs - b.atMs)) {
              const wait = started + fault.atMs - Date.now();
              if (wait > 0) await new Promise((done) => setTimeout(done, wait));
              const target = workers[fault.worker]!;
              if (target.child.exitCode !== null || target.child.signalCode !== null) continue;
              if (fault.signal === "SIGKILL") {
                target.child.kill("SIGKILL");
                workers.push(spawnWorker(schema));
              } else {
                // Past its 2 s lease: its runs are taken over, and it is fenced when it wakes.
                target.child.kill("SIGSTOP");
                setTimeout(() => target.child.kill("SIGCONT"), 2_500);
              }
            }
            // Every run ends: completed, or stopped by the tenant's cap.
            const deadline = Date.now() + 30_000;
            let ended = 0;
            while (Date.now() < deadline) {
              const runs = await store.list({ limit: 100 });
              ended = runs.filter((run) => run.status !== "running").length;
              if (ended === RUNS) break;
              await new Promise((done) => setTimeout(done, 200));
            }
            expect(ended).toBe(RUNS);
            let spent = 0;
            let superseded = 0;
            const statuses: string[] = [];
            for (let index = 0; index < RUNS; index += 1) {
              const fold = foldRun(await store.read(`r${index}`));
              // A request in flight when its worker was stopped past the lease and sent again by
              // the next owner is reserved once (same run and step): the first attempt's worst
              // case is outside the tenant's day (a stated limit); it is counted apart.
              spent += fold.committedUsd - fold.supersededUsd;
              superseded += fold.supersededUsd;
              statuses.push(`${fold.status}:${fold.end?.why}`);
            }
            if (process.env.DEBUG_LIMITS === "1") {
              // DEBUG_LIMITS=1: every reserve and settle beside what the logs hold, for a failure.
              const { writeFileSync } = await import("node:fs");
              const { tmpdir } = await import("node:os");
              const logged: Record<string, number> = {};
              for (let index = 0; index < RUNS; index += 1)
                for (const event of await store.read(`r${index}`))
                  if (
                    (event.type === "model-response" ||
                      event.type === "model-retry" ||
                      event.type === "model-error") &&
                    typeof event.costUsd === "number"
                  )
                    logged[`r${index}:${event.step}`] =
                      (logged[`r${index}:${event.step}`] ?? 0) + event.costUsd;
              writeFileSync(
                `${tmpdir()}/loopguard-limits-debug.json`,
                JSON.stringify({ logged, lines: debugLines, faults }, null, 1),
              );
            }
            if (superseded > 0)
              console.log(
                `[tenant fleet] $${superseded.toFixed(4)} of superseded attempts' worst case beside $${spent.toFixed(4)} of the $${MAX_USD} day`,
              );
            expect(spent).toBeLessThanOrEqual(MAX_USD + 1e-9);
            // The cap bound: some run was stopped by it.
            expect(statuses).toContain("stopped:run_budget");
            const limits = postgresLimitStore({ connectionString: databaseUrl!, schema, max: 1 });
            const { counters } = await limits.inspect({ prefix: "tenant:acme:usd" });
            await limits.close();
            expect(counters[0]!.settled + counters[0]!.reserved).toBeLessThanOrEqual(
              MAX_USD + 1e-9,
            );
            // What the logs hold was counted (more is held only for steps a killed worker paid for).
            expect(counters[0]!.settled + counters[0]!.reserved).toBeGreaterThanOrEqual(
              spent - 1e-9,
            );
          } finally {
            for (const worker of workers) {
              worker.child.kill("SIGCONT");
              worker.child.kill("SIGKILL");
            }
            await store.close();
          }
        },
      ),
      { numRuns: 2, endOnFailure: true },
    );
  }, 120_000);
});
