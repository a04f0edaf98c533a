/**
 * Fleet limits across processes: four processes share one token bucket (capacity C, refill r
 * per second) and one tenant's day on a real PostgreSQL, while the test SIGKILLs some (and
 * starts replacements) and SIGSTOPs others mid-run at random points (fast-check picks them).
 * Over every interval, the calls admitted never exceed C + r x its length, and the tenant's
 * spend (settled plus held) never exceeds its cap.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresLimitStore } from "../../src/postgres-limit-store.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../../..");
const CAPACITY = 5;
const REFILL = 20;
const CAP_USD = 3;
const DURATION_MS = 2_500;

interface Line {
  pid: number;
  event: string;
  at?: number;
  usd?: number;
}

describe.skipIf(!databaseUrl)("fleet limits across processes (SIGKILL, SIGSTOP)", () => {
  const schema = freshSchema("lg_limits_fleet");
  beforeAll(() => {
    // Children run compiled JS: the store (and core, when it was never built).
    if (!existsSync(resolve(repo, "packages/core/dist/index.js")))
      execFileSync("npx", ["tsc", "-p", "packages/core/tsconfig.build.json"], {
        cwd: repo,
        stdio: "inherit",
      });
    execFileSync("npx", ["tsc", "-p", "packages/checkpoint/test/pg/tsconfig.limits.json"], {
      cwd: repo,
      stdio: "inherit",
    });
  }, 120_000);
  afterAll(async () => {
    await dropSchema(schema);
  });

  const spawnClient = (env: Record<string, string>, lines: Line[]) => {
    const child = spawn(process.execPath, [resolve(here, "fixtures/limit-client.mjs")], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LG_SCHEMA: schema, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const ready = new Promise<void>((resolveReady) => {
      createInterface({ input: child.stdout! }).on("line", (text) => {
        try {
          const line = JSON.parse(text) as Line;
          lines.push(line);
          if (line.event === "ready") resolveReady();
        } catch {
          // not a line of ours
        }
      });
      child.once("exit", () => resolveReady());
    });
    const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()));
    return { child, ready, exited };
  };

  it("property: admitted calls <= C + r x interval, tenant spend <= cap, across random kills and stops", async () => {
    // Migrate once, so four processes starting at once only race on rows.
    const setup = postgresLimitStore({ connectionString: databaseUrl!, schema, max: 1 });
    await setup.prune();
    await setup.close();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            atMs: fc.integer({ min: 100, max: DURATION_MS - 300 }),
            client: fc.integer({ min: 0, max: 3 }),
            signal: fc.constantFrom("SIGKILL", "SIGSTOP"),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        async (faults) => {
          round += 1;
          const dayStart = Math.floor(Date.now() / 86_400_000) * 86_400_000;
          const env = {
            BUCKET_KEY: `fleet:bucket:${round}:${Math.random()}`,
            TENANT_KEY: `tenant:acme-${round}:usd`,
            CAPACITY: String(CAPACITY),
            REFILL: String(REFILL),
            CAP_USD: String(CAP_USD),
            // Today's window: the clients reserve at the real clock, and a window that has ended
            // is pruned (its counter starts over), so a fixed date fails once the day is past.
            DAY_START: String(dayStart),
            DURATION_MS: String(DURATION_MS),
          };
          const lines: Line[] = [];
          const clients: Array<{
            child: ChildProcess;
            ready: Promise<void>;
            exited: Promise<void>;
          }> = [];
          for (let index = 0; index < 4; index += 1) clients.push(spawnClient(env, lines));
          await Promise.all(clients.map((client) => client.ready));
          const started = Date.now();
          for (const fault of [...faults].sort((a, b) => a.atMs - b.atMs)) {
            const wait = started + fault.atMs - Date.now();
            if (wait > 0) await new Promise((resolveWait) => setTimeout(resolveWait, wait));
            const target = clients[fault.client]!;
            if (target.child.exitCode !== null || target.child.signalCode !== null) continue;
            if (fault.signal === "SIGKILL") {
              target.child.kill("SIGKILL");
              // A replacement joins the fleet, as a supervisor would start one.
              const replacement = spawnClient(
                { ...env, DURATION_MS: String(Math.max(300, DURATION_MS - fault.atMs)) },
                lines,
              );
              clients.push(replacement);
            } else {
              target.child.kill("SIGSTOP");
              setTimeout(() => target.child.kill("SIGCONT"), 400);
            }
          }
          await Promise.all(clients.map((client) => client.exited));
          const admitted = lines
            .filter((line) => line.event === "admitted")
            .map((line) => line.at!);
          admitted.sort((a, b) => a - b);
          // Every interval [admitted[i], admitted[j]] holds j - i + 1 calls.
          let worst = Number.NEGATIVE_INFINITY;
          for (let i = 0; i < admitted.length; i += 1)
            for (let j = i; j < admitted.length; j += 1) {
              const excess =
                j - i + 1 - (CAPACITY + (REFILL * (admitted[j]! - admitted[i]!)) / 1000);
              if (excess > worst) worst = excess;
            }
          expect(worst).toBeLessThanOrEqual(1e-6);
          // The bucket did bind: more calls were tried than it admitted at once.
          expect(admitted.length).toBeGreaterThan(CAPACITY);
          const spent = lines
            .filter((line) => line.event === "spent")
            .reduce((sum, line) => sum + line.usd!, 0);
          expect(spent).toBeLessThanOrEqual(CAP_USD + 1e-9);
          const view = postgresLimitStore({ connectionString: databaseUrl!, schema, max: 1 });
          const { counters } = await view.inspect({
            prefix: env.TENANT_KEY,
            now: Date.now(),
          });
          await view.close();
          expect(counters).toHaveLength(1);
          expect(counters[0]!.settled + counters[0]!.reserved).toBeLessThanOrEqual(CAP_USD + 1e-9);
          // What the store counts as settled is exactly what the processes saw settled, or more
          // (a process killed between its settle and its line).
          expect(counters[0]!.settled).toBeGreaterThanOrEqual(spent - 1e-9);
        },
      ),
      { numRuns: 3, endOnFailure: true },
    );
  }, 600_000);
});
