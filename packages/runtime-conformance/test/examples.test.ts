import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Miniflare } from "miniflare";
import { describe, expect, it } from "vitest";
import { bundleForWorkers, packageDir, run, runtimeBinary } from "./launch.js";

// The examples in examples/runtimes, run as their comments say: the Bun script with bun, the
// Deno script with deno, the Worker bundled as wrangler would and served by workerd with the
// compatibility settings and D1 binding of its wrangler.toml.
const examples = resolve(packageDir, "../../examples/runtimes");
const slow = 600_000;

interface Outcome {
  runtime: string;
  runId: string;
  status: string;
  answer: string;
  refused: string[];
  refunds: number;
  events: number;
}

function expectDesk(outcome: Outcome, runtime: string) {
  expect(outcome.runtime).toBe(runtime);
  expect(outcome.status).toBe("completed");
  // The refund the task vouches for runs; the email to the ticket's address does not.
  expect(outcome.refunds).toBe(1);
  expect(outcome.refused).toEqual(["send_email"]);
  expect(outcome.answer).toBe("Refunded 89.99 for A1001; write to [EMAIL] if it fails.");
  expect(outcome.events).toBeGreaterThan(5);
}

const lastJsonLine = (stdout: string, stderr: string): Outcome => {
  const line = stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as Outcome;
  } catch {
    throw new Error(`no JSON outcome:\nstdout:\n${stdout}\nstderr:\n${stderr}`);
  }
};

describe("examples/runtimes", () => {
  const bun = runtimeBinary("bun");
  it.skipIf(!bun.path)(
    "bun/support-desk.ts runs on Bun",
    async () => {
      const output = await run(bun.path!, ["bun/support-desk.ts"], { cwd: examples });
      expectDesk(lastJsonLine(output.stdout, output.stderr), "bun");
    },
    slow,
  );

  const deno = runtimeBinary("deno");
  it.skipIf(!deno.path)(
    "deno/support-desk.ts runs on Deno 2",
    async () => {
      const output = await run(
        deno.path!,
        ["run", "--allow-read", "--allow-env", "deno/support-desk.ts"],
        {
          cwd: examples,
        },
      );
      expectDesk(lastJsonLine(output.stdout, output.stderr), "deno");
    },
    slow,
  );

  it(
    "worker/ runs in workerd with its wrangler.toml, keeping runs in D1 across requests",
    async () => {
      const toml = readFileSync(resolve(examples, "worker/wrangler.toml"), "utf8");
      const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
      const flags = [
        ...(/^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1] ?? "").matchAll(
          /"([^"]+)"/g,
        ),
      ].map((match) => match[1]!);
      const binding = /binding\s*=\s*"([^"]+)"/.exec(
        toml.slice(toml.indexOf("[[d1_databases]]")),
      )?.[1];
      const main = /^main\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
      expect({ compatibilityDate, flags, binding, main }).toEqual({
        compatibilityDate: "2026-04-01",
        flags: ["nodejs_compat"],
        binding: "DB",
        main: "src/index.ts",
      });
      const bundle = await bundleForWorkers(resolve(examples, "worker", main!));
      expect(bundle.nodeImports.filter((path) => path !== "node:async_hooks")).toEqual([]);
      const miniflare = new Miniflare({
        modules: true,
        script: bundle.code,
        compatibilityDate: compatibilityDate!,
        compatibilityFlags: flags,
        d1Databases: { [binding!]: "loopguard-example" },
      });
      try {
        const first = await miniflare.dispatchFetch("http://localhost/", { method: "POST" });
        expect(first.status, await first.clone().text()).toBe(200);
        expectDesk((await first.json()) as Outcome, "workerd");
        const second = await miniflare.dispatchFetch("http://localhost/", { method: "POST" });
        const { runId } = (await second.json()) as Outcome;
        const listed = (await (
          await miniflare.dispatchFetch("http://localhost/runs")
        ).json()) as Array<{
          runId: string;
          status: string;
        }>;
        expect(listed.map((summary) => summary.status)).toEqual(["completed", "completed"]);
        expect(listed.map((summary) => summary.runId)).toContain(runId);
        // A refund over the limit parks in D1, and a later request approves and finishes it.
        const parked = (await (
          await miniflare.dispatchFetch("http://localhost/refund", { method: "POST" })
        ).json()) as { runId: string; status: string };
        expect(parked.status).toBe("awaiting_approval");
        const approved = (await (
          await miniflare.dispatchFetch(
            `http://localhost/approve/${encodeURIComponent(parked.runId)}`,
            {
              method: "POST",
            },
          )
        ).json()) as { status: string; answer: string };
        expect(approved).toMatchObject({ status: "completed", answer: "Refunded 900 for A1001." });
        const after = (await (
          await miniflare.dispatchFetch("http://localhost/runs")
        ).json()) as Array<{
          runId: string;
          status: string;
        }>;
        expect(after.find((summary) => summary.runId === parked.runId)?.status).toBe("completed");
      } finally {
        await miniflare.dispose();
      }
    },
    slow,
  );
});
