import { userInfo } from "node:os";
import type { RunResult } from "@loopguard/core";
import { supportDefences } from "@loopguard/evals";
import { type Command, InvalidArgumentError } from "commander";
import type pc from "picocolors";
import { type DemoAgent, type DemoPaths, demoAgent, demoPaths } from "./demo-agent.js";
import { summaryBox } from "./narrate.js";
import { UsageError } from "./usage-error.js";

/** The colour functions of picocolors (all identity when colour is off). */
export type Colors = ReturnType<typeof pc.createColors>;

/** What every command file gets from `cli.ts`: where to print, colours and the exit code. */
export interface CliShared {
  /** Prints one line of the command's output. */
  out: (line: string) => void;
  colors: Colors;
  /** Sets the exit code `main()` resolves with (0 unless a command says otherwise). */
  exit: (code: number) => void;
}

/**
 * One CLI command: adds itself (its name, arguments, options and action) to the program.
 * Each file in `src/commands/` exports one `register`, and `cli.ts` lists them.
 */
export type RegisterCommand = (program: Command, shared: CliShared) => void;

/** The default state directory of the CLI (runs; the ledger, freeze file and vault sit beside it). */
export const defaultDir = ".loopguard/runs";

/** Adds `--dir DIR` (the runs directory) to a command. */
export function withDir(command: Command): Command {
  return command.option(
    "--dir <dir>",
    "the runs directory (the ledger, freeze file and 0600 PII vault sit beside it)",
    defaultDir,
  );
}

/** The state paths of a command's `--dir`. */
export const pathsOf = (options: { dir?: string }): DemoPaths =>
  demoPaths(options.dir ?? defaultDir);

/** A commander argument parser for a whole number from 1 to `max`. */
export const positiveInt =
  (flag: string, max = Number.MAX_SAFE_INTEGER) =>
  (value: string): number => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1)
      throw new InvalidArgumentError(
        `${flag} must be a positive integer, got ${JSON.stringify(value)}`,
      );
    if (number > max)
      throw new InvalidArgumentError(`${flag} must be at most ${max}, got ${number}`);
    return number;
  };

/**
 * Who is answering or freezing when `--as` is not given: the operating-system user (so the
 * log names a person, not the tool), or `$USER` where the OS cannot say.
 */
export function osUser(): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // userInfo() throws where the uid has no passwd entry (some containers).
  }
  return process.env.USER || process.env.USERNAME || "unknown-user";
}

/** The summary box of a run: its figures and the side effects it made (by idempotency key). */
export function runSummary(colors: Colors, result: RunResult, demo: DemoAgent): string {
  const effects = demo.desk.ledger.effects.filter((effect) =>
    effect.idempotencyKey.startsWith(`${result.runId}:`),
  );
  return summaryBox(colors, result, effects, supportDefences(demo.packages).redact);
}

/** The order a stored demo run is about (the scripted model must be the same one after a restart). */
export async function orderOfRun(paths: DemoPaths, runId: string): Promise<string> {
  const { store } = await demoAgent({ paths });
  const start = (await store.read(runId))[0];
  if (start?.type !== "run-start")
    throw new UsageError(`run ${runId} not found in ${paths.runs}; list runs with: loopguard runs`);
  return /order (A\d{4})/.exec(start.task)?.[1] ?? "A1001";
}
