#!/usr/bin/env node
import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { LoopguardError } from "@loopguard/core";
import { Command, CommanderError } from "commander";
import pc from "picocolors";
import type { CliShared, RegisterCommand } from "./cli-context.js";
import { register as approve } from "./commands/approve.js";
import { register as demo } from "./commands/demo.js";
import { register as evalCommand } from "./commands/eval.js";
import { register as forget } from "./commands/forget.js";
import { register as freeze } from "./commands/freeze.js";
import { register as limits } from "./commands/limits.js";
import { register as mcpProxy } from "./commands/mcp-proxy.js";
import { register as replay } from "./commands/replay.js";
import { register as resume } from "./commands/resume.js";
import { register as runs } from "./commands/runs.js";
import { register as serve } from "./commands/serve.js";
import { register as submit } from "./commands/submit.js";
import { register as trace } from "./commands/trace.js";
import { register as unfreeze } from "./commands/unfreeze.js";
import { register as verify } from "./commands/verify.js";
import { register as worker } from "./commands/worker.js";
import { UsageError } from "./usage-error.js";

/**
 * Every command of the CLI, in the order `loopguard --help` lists them. A new command is one
 * file in `src/commands/` exporting `register(program, shared)` and one line here.
 */
const commands: readonly RegisterCommand[] = [
  demo,
  runs,
  resume,
  approve,
  trace,
  evalCommand,
  freeze,
  unfreeze,
  serve,
  worker,
  submit,
  limits,
  replay,
  verify,
  mcpProxy,
  forget,
];

/** The CLI's version, from its package.json (beside `src/` and `dist/`). */
export const version = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  }
).version;

/** Builds the commander program with every command registered. */
export function program(shared: CliShared): Command {
  const root = new Command("loopguard")
    .description("loopguard: safe, durable Claude agents")
    .version(version, "-V, --version", "print the version")
    .helpOption("-h, --help", "print usage")
    .option("--no-color", "turn colour off (so does NO_COLOR)")
    .showSuggestionAfterError(true)
    .showHelpAfterError("(run loopguard --help for the list of commands)")
    .exitOverride()
    .configureOutput({
      writeOut: (text) => shared.out(text.replace(/\n$/, "")),
      writeErr: (text) => process.stderr.write(text),
      outputError: (text, write) => write(`[loopguard] ${text.replace(/^error: /, "")}`),
    })
    .addHelpText(
      "after",
      `
State: --dir defaults to .loopguard/runs; the ledger, the freeze file and each run's 0600 PII
vault (.loopguard/vault) sit beside it.
Start with: loopguard demo --tour (the whole story, offline, each line explained)`,
    );
  root.helpCommand("help [command]", "print usage of a command");
  for (const register of commands) register(root, shared);
  for (const command of root.commands)
    command.showHelpAfterError(`(run loopguard ${command.name()} --help for usage)`);
  return root;
}

/** Runs the CLI; resolves with the exit code. */
export async function main(
  argv: string[],
  out: (line: string) => void = (line) => {
    if (!stdoutClosed) process.stdout.write(`${line}\n`);
  },
): Promise<number> {
  const colorOff = argv.includes("--no-color") || "NO_COLOR" in process.env;
  const colors = pc.createColors(
    !colorOff && (process.stdout.isTTY || "FORCE_COLOR" in process.env),
  );
  let exitCode = 0;
  const root = program({
    out,
    colors,
    exit: (code) => {
      exitCode = code;
    },
  });
  if (argv.length === 0) {
    out(root.helpInformation().replace(/\n$/, ""));
    return 2;
  }
  try {
    await root.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError)
      // Help and --version end with code 0; a parse error (unknown flag, bad value) has
      // been printed already and is a usage error.
      return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return exitCode;
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

/** Whether the reader of standard output went away (`| head`): nothing more is written. */
let stdoutClosed = false;

/**
 * A reader that goes away (`loopguard --help | head -1`) closes the pipe: the next write fails
 * with EPIPE. That is the reader's choice, not an error: the CLI stops writing and the command
 * finishes what it started (a run is not left half done), ending quietly with its own status.
 */
function endQuietlyOnClosedPipe(): void {
  const closed = (error: NodeJS.ErrnoException) =>
    error.code === "EPIPE" || error.code === "ERR_STREAM_DESTROYED";
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (!closed(error)) throw error;
    stdoutClosed = true;
  });
  process.stderr.on("error", (error: NodeJS.ErrnoException) => {
    if (!closed(error)) throw error;
  });
}

if (invokedDirectly()) {
  endQuietlyOnClosedPipe();
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
