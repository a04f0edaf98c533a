#!/usr/bin/env node
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { LoopguardError, type RunResult, type Span, spansFromEvents } from "@loopguard/core";
import {
  formatScorecard,
  loadPackages,
  runScenarios,
  scenarios,
  supportDefences,
} from "@loopguard/evals";
import pc from "picocolors";
import { type DemoAgent, type DemoPaths, demoAgent, demoPaths, newRunId } from "./demo-agent.js";
import { narrator, summaryBox } from "./narrate.js";
import { serve } from "./serve.js";
import { loadTraceViewer } from "./trace-viewer.js";
import { UsageError } from "./usage-error.js";

const usage = `loopguard: safe, durable Claude agents

  loopguard demo [--crash-after N] [--order ID] [--step-delay MS] [--dir DIR] [--no-color]
  loopguard runs [--dir DIR]
  loopguard resume <runId> [--dir DIR]
  loopguard approve <runId> [--deny | --answer TEXT] [--as NAME] [--request ID] [--note TEXT] [--dir DIR]
  loopguard freeze --reason "..." [--as NAME] [--dir DIR]
  loopguard unfreeze [--as NAME] [--dir DIR]
  loopguard trace <runId> [--out DIR] [--dir DIR]
  loopguard eval [--json] [--only NAME]... [--live] [--k N] [--corpus] [--sabotage DEFENCE]...
  loopguard serve [--port N] [--dir DIR]   (LOOPGUARD_WEBHOOK_SECRET required)
  loopguard worker [--connection URL] [--concurrency N] [--schema NAME] [--lease-ms N] [--slice-ms N]
                   [--polling-ms N] [--step-delay MS]   (or DATABASE_URL)

  --dir defaults to .loopguard/runs; each run's PII vault is a 0600 file in .loopguard/vault.
  NO_COLOR or --no-color turns colour off.`;

type Options = Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }>;

const common: Options = {
  dir: { type: "string" },
  "no-color": { type: "boolean" },
  help: { type: "boolean", short: "h" },
};

function parse(argv: string[], options: Options, positionals: number) {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...common, ...options },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ""));
  }
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(
      positionals === 0
        ? `unexpected argument ${JSON.stringify(parsed.positionals[0])}`
        : `expected ${positionals} argument${positionals === 1 ? "" : "s"} (a run id), got ${parsed.positionals.length}`,
    );
  }
  return parsed as {
    values: Record<string, string | boolean | string[] | undefined>;
    positionals: string[];
  };
}

const positiveInt = (value: unknown, flag: string): number | undefined => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value !== "string" || !/^\d+$/.test(value) || !Number.isInteger(number) || number < 1)
    throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return number;
};

/** Runs the CLI; resolves with the exit code. */
export async function main(
  argv: string[],
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<number> {
  const [command, ...rest] = argv;
  const colorOff = argv.includes("--no-color") || "NO_COLOR" in process.env;
  const colors = pc.createColors(
    !colorOff && (process.stdout.isTTY || "FORCE_COLOR" in process.env),
  );
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    out(usage);
    return command === undefined ? 2 : 0;
  }
  const pathsOf = (values: Record<string, unknown>): DemoPaths =>
    demoPaths(typeof values.dir === "string" ? values.dir : ".loopguard/runs");
  switch (command) {
    case "demo": {
      const { values } = parse(
        rest,
        {
          "crash-after": { type: "string" },
          order: { type: "string" },
          "step-delay": { type: "string" },
        },
        0,
      );
      const crash = positiveInt(values["crash-after"], "--crash-after");
      const stepDelayMs = positiveInt(values["step-delay"], "--step-delay") ?? 0;
      if (stepDelayMs > 60_000)
        throw new UsageError(`--step-delay must be at most 60000 ms, got ${stepDelayMs}`);
      const orderId = typeof values.order === "string" ? values.order : "A1001";
      if (!/^A\d{4}$/.test(orderId))
        throw new UsageError(
          `--order must be an order id such as A1001 or A1002, got ${JSON.stringify(orderId)}`,
        );
      const paths = pathsOf(values);
      const runId = newRunId();
      const demo = await demoAgent({
        paths,
        runId,
        orderId,
        stepDelayMs,
        onEvent: narrator(colors, out),
        ...(crash
          ? {
              crashAfter: crash,
              onCrash: () =>
                out(
                  colors.red(
                    colors.bold(
                      `💥 simulated crash after ${crash} durable append${crash === 1 ? "" : "s"}: the process dies now (SIGKILL). Finish with: loopguard resume <runId>`,
                    ),
                  ),
                ),
            }
          : {}),
      });
      out(colors.bold("loopguard demo: Acme Shop's support agent reads a poisoned help article"));
      out(
        colors.dim(
          `defences: ${demo.active.join(", ")}${demo.missing.length > 0 ? `; not yet available: ${demo.missing.join("; ")}` : ""}`,
        ),
      );
      const result = await demo.agent.run(
        `Hi, order ${orderId} arrived broken. Can I get a refund?`,
        { runId },
      );
      out(runSummary(colors, result, demo));
      return result.status === "failed" ? 1 : 0;
    }
    case "resume": {
      const { values, positionals } = parse(rest, {}, 1);
      const demo = await demoAgent({
        paths: pathsOf(values),
        runId: positionals[0]!,
        orderId: await orderOfRun(pathsOf(values), positionals[0]!),
        onEvent: narrator(colors, out),
      });
      const result = await demo.agent.resume(positionals[0]!);
      out(runSummary(colors, result, demo));
      return result.status === "failed" ? 1 : 0;
    }
    case "approve": {
      const { values, positionals } = parse(
        rest,
        {
          deny: { type: "boolean" },
          answer: { type: "string" },
          as: { type: "string" },
          request: { type: "string" },
          note: { type: "string" },
        },
        1,
      );
      if (values.deny && values.answer !== undefined)
        throw new UsageError("give --deny or --answer, not both");
      // --answer forwards a person's reply as written (chat-ops): only "approve" or "deny" is
      // read as consent or refusal; anything else is unreadable and halts the run (fail closed).
      const answer =
        typeof values.answer === "string" ? values.answer.trim().toLowerCase() : undefined;
      const decision =
        answer === undefined
          ? values.deny
            ? "deny"
            : "approve"
          : answer === "approve" || answer === "deny"
            ? answer
            : "indeterminate";
      const note =
        decision === "indeterminate"
          ? `unreadable answer: ${JSON.stringify(String(values.answer).slice(0, 200))}`
          : values.note;
      const demo = await demoAgent({
        paths: pathsOf(values),
        runId: positionals[0]!,
        orderId: await orderOfRun(pathsOf(values), positionals[0]!),
        onEvent: narrator(colors, out),
      });
      const result = await demo.agent.approve(positionals[0]!, {
        decision,
        approver: typeof values.as === "string" ? values.as : (process.env.USER ?? "cli"),
        ...(typeof values.request === "string" ? { requestId: values.request } : {}),
        ...(typeof note === "string" ? { note } : {}),
      });
      out(runSummary(colors, result, demo));
      return 0;
    }
    case "runs": {
      const { values } = parse(rest, {}, 0);
      const demo = await demoAgent({ paths: pathsOf(values) });
      const runs = await demo.store.list();
      if (runs.length === 0) {
        out(`no runs in ${pathsOf(values).runs}; start one with: loopguard demo`);
        return 0;
      }
      const rows = runs.map((run) => [
        run.runId,
        run.status,
        String(run.steps),
        `$${run.costUsd.toFixed(5)}`,
        new Date(run.updatedAt).toISOString(),
      ]);
      const header = ["id", "status", "steps", "cost", "last update"];
      const widths = header.map((title, column) =>
        Math.max(title.length, ...rows.map((row) => row[column]!.length)),
      );
      out(colors.bold(header.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")));
      for (const row of rows)
        out(row.map((cell, column) => cell.padEnd(widths[column]!)).join("  "));
      return 0;
    }
    case "freeze":
    case "unfreeze": {
      const { values } = parse(rest, { reason: { type: "string" }, as: { type: "string" } }, 0);
      const policyModule = (await loadPackages()).modules.policy;
      if (!policyModule)
        throw new UsageError(
          "freeze needs @loopguard/policy, which is not available in this build",
        );
      const store = policyModule.fileFreezeStore({ path: pathsOf(values).freeze });
      const by = typeof values.as === "string" ? values.as : (process.env.USER ?? "cli");
      if (command === "freeze") {
        if (typeof values.reason !== "string" || values.reason.trim() === "")
          throw new UsageError('freeze needs --reason "why", shown to every refused call');
        await store.freeze({ reason: values.reason, by });
        out(
          colors.red(
            `fleet frozen (${pathsOf(values).freeze}): every tool call is refused as kill_switch until: loopguard unfreeze`,
          ),
        );
      } else {
        await store.unfreeze({ by });
        out(colors.green("fleet unfrozen: tool calls are judged by the policy again"));
      }
      return 0;
    }
    case "trace": {
      const { values, positionals } = parse(rest, { out: { type: "string" } }, 1);
      const paths = pathsOf(values);
      const demo = await demoAgent({ paths });
      const runId = positionals[0]!;
      const events = await demo.store.read(runId);
      if (events.length === 0)
        throw new UsageError(
          `run ${runId} not found in ${paths.runs}; list runs with: loopguard runs`,
        );
      const redact = supportDefences(demo.packages).redact;
      const spans = spansFromEvents(events).map((span) => redact(span) as Span);
      const dir = resolve(
        typeof values.out === "string" ? values.out : join(paths.runs, "..", "traces", runId),
      );
      mkdirSync(dir, { recursive: true });
      const viewer = await loadTraceViewer();
      const json = viewer
        ? viewer.buildTraceJson(events.map((event) => redact(event)))
        : { runId, spans };
      writeFileSync(join(dir, "trace.json"), `${JSON.stringify(json, null, 2)}\n`);
      out(`wrote ${join(dir, "trace.json")} (${spans.length} spans)`);
      if (viewer) {
        writeFileSync(join(dir, "trace.html"), viewer.renderTraceHtml(spans, { runId }));
        out(`wrote ${join(dir, "trace.html")}`);
      } else {
        out(
          colors.yellow(
            "trace.html skipped: the HTML viewer (apps/demo/src/trace) is not in this build yet",
          ),
        );
      }
      return 0;
    }
    case "eval": {
      const { values } = parse(
        rest,
        {
          json: { type: "boolean" },
          only: { type: "string", multiple: true },
          live: { type: "boolean" },
          k: { type: "string" },
          corpus: { type: "boolean" },
          sabotage: { type: "string", multiple: true },
        },
        0,
      );
      const known = [
        "taint_gate",
        "policy_ask",
        "policy_deny",
        "scanner",
        "redaction",
        "vault",
        "idempotency_keys",
        "model_retries",
        "run_guard",
      ] as const;
      const sabotage = ((values.sabotage as string[] | undefined) ?? []).map((name) => {
        if (!(known as readonly string[]).includes(name))
          throw new UsageError(
            `--sabotage takes one of ${known.join(", ")} (a defence to switch off), got ${JSON.stringify(name)}`,
          );
        return name as (typeof known)[number];
      });
      if (sabotage.length > 0 && values.live)
        throw new UsageError(
          "--sabotage is for offline runs; live runs use the production defences",
        );
      const k = positiveInt(values.k, "--k") ?? 1;
      if (values.k !== undefined && !values.live)
        throw new UsageError(
          "--k is for --live runs (pass@k); offline scenarios are deterministic",
        );
      if (values.live) {
        const { liveEval } = await import("./live-eval.js");
        return liveEval({
          k,
          json: Boolean(values.json),
          only: (values.only as string[] | undefined) ?? [],
          out,
          colors,
        });
      }
      if (values.corpus) {
        const { corpusEval } = await import("./corpus-eval.js");
        return corpusEval({ json: Boolean(values.json), out, colors, sabotage });
      }
      const viewer = await loadTraceViewer();
      const card = await runScenarios(scenarios, {
        ...(values.only ? { only: values.only as string[] } : {}),
        ...(sabotage.length > 0 ? { sabotage } : {}),
        ...(viewer
          ? {
              renderTrace: (spans: Span[], meta: { runId: string }) =>
                viewer.renderTraceHtml(spans, meta),
            }
          : {}),
      });
      out(values.json ? JSON.stringify(card, null, 2) : formatScorecard(card, colors));
      return card.ok ? 0 : 1;
    }
    case "serve": {
      const { values } = parse(rest, { port: { type: "string" } }, 0);
      const port = positiveInt(values.port, "--port") ?? 8787;
      if (port > 65535) throw new UsageError(`--port must be at most 65535, got ${port}`);
      const secret = process.env.LOOPGUARD_WEBHOOK_SECRET;
      if (!secret || secret.length < 16)
        throw new UsageError(
          "serve needs LOOPGUARD_WEBHOOK_SECRET (16 characters or more): approvals are only taken from callers who know it",
        );
      await serve({ port, secret, paths: pathsOf(values), out });
      return 0;
    }
    case "worker": {
      const { values } = parse(
        rest,
        {
          connection: { type: "string" },
          concurrency: { type: "string" },
          schema: { type: "string" },
          "lease-ms": { type: "string" },
          "slice-ms": { type: "string" },
          "polling-ms": { type: "string" },
          "step-delay": { type: "string" },
        },
        0,
      );
      const concurrency = positiveInt(values.concurrency, "--concurrency") ?? 4;
      const connectionString =
        typeof values.connection === "string" ? values.connection : process.env.DATABASE_URL;
      const checkpoint = (await loadPackages()).modules.checkpoint;
      if (!checkpoint || typeof checkpoint.createWorker !== "function")
        throw new UsageError(
          "worker is not available: this build of @loopguard/checkpoint does not export createWorker (PostgreSQL workers)",
        );
      if (!connectionString)
        throw new UsageError(
          "worker needs a PostgreSQL database: --connection postgres://... or DATABASE_URL",
        );
      const leaseMs = positiveInt(values["lease-ms"], "--lease-ms");
      const sliceMs = positiveInt(values["slice-ms"], "--slice-ms");
      const pollingIntervalMs = positiveInt(values["polling-ms"], "--polling-ms");
      const stepDelayMs = positiveInt(values["step-delay"], "--step-delay");
      const { runWorker } = await import("./worker.js");
      return runWorker({
        connectionString,
        concurrency,
        ...(typeof values.schema === "string" ? { schema: values.schema } : {}),
        ...(leaseMs !== undefined ? { leaseMs } : {}),
        ...(sliceMs !== undefined ? { sliceMs } : {}),
        ...(pollingIntervalMs !== undefined ? { pollingIntervalMs } : {}),
        ...(stepDelayMs !== undefined ? { stepDelayMs } : {}),
        out,
      });
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${usage}`);
  }
}

/** The order a stored demo run is about (the scripted model must be the same one after a restart). */
/** The summary box of a run: its figures and the side effects it made (by idempotency key). */
function runSummary(
  colors: Parameters<typeof summaryBox>[0],
  result: RunResult,
  demo: DemoAgent,
): string {
  const effects = demo.desk.ledger.effects.filter((effect) =>
    effect.idempotencyKey.startsWith(`${result.runId}:`),
  );
  return summaryBox(colors, result, effects, supportDefences(demo.packages).redact);
}

async function orderOfRun(paths: DemoPaths, runId: string): Promise<string> {
  const { store } = await demoAgent({ paths });
  const start = (await store.read(runId))[0];
  if (start?.type !== "run-start")
    throw new UsageError(`run ${runId} not found in ${paths.runs}; list runs with: loopguard runs`);
  return /order (A\d{4})/.exec(start.task)?.[1] ?? "A1001";
}

/**
 * Whether this file is the process's entry point. npm and pnpm install the bin as a symlink
 * (`node_modules/.bin/loopguard`), and `process.argv[1]` keeps the link's path while
 * `import.meta.url` is the real file's, so both sides are compared as real paths.
 */
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof UsageError) {
        process.stderr.write(`${error.message}\n(run loopguard --help for usage)\n`);
        process.exitCode = 2;
        return;
      }
      process.stderr.write(
        `${LoopguardError.isInstance(error) ? (error as Error).message : `[loopguard] unexpected error: ${(error as Error)?.stack ?? String(error)}`}\n`,
      );
      process.exitCode = 1;
    },
  );
}
