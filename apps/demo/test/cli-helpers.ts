import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { supportDeskFixtures } from "@loopguard/evals";

/** The built CLI the tests run as child processes (`pnpm --filter loopguard build` first). */
export const cli = resolve(import.meta.dirname, "../dist/cli.js");
export const built = existsSync(cli);

/** Runs the CLI to completion in a new process. */
export const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [cli, ...args], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", ...env },
    timeout: 240_000,
  });

/** Starts the CLI in a new process and collects its output. */
export function start(
  args: string[],
  env: Record<string, string> = {},
  options: { stdin?: "ignore" | "pipe" } = {},
): {
  child: ChildProcess;
  output: () => string;
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
} {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: [options.stdin ?? "ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    text += chunk;
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    text += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on("exit", (code, signal) => done({ code, signal })),
  );
  const waitFor = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<void>((done, fail) => {
      const started = Date.now();
      const poll = () => {
        if (pattern.test(text)) return done();
        if (child.exitCode !== null || Date.now() - started > timeoutMs)
          return fail(new Error(`never saw ${pattern} in:\n${text}`));
        setTimeout(poll, 20);
      };
      poll();
    });
  return { child, output: () => text, waitFor, exited };
}

/** The run id a `demo` printed. */
export const runIdOf = (stdout: string): string => {
  const id = /run\s+(run_[0-9a-f]{16})/.exec(stdout)?.[1];
  if (!id) throw new Error(`no run id in:\n${stdout}`);
  return id;
};

/** The side effects recorded in a demo directory's ledger. */
export const ledgerOf = (root: string) =>
  existsSync(join(root, "ledger.jsonl"))
    ? readFileSync(join(root, "ledger.jsonl"), "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map(
          (line) =>
            JSON.parse(line) as {
              kind: string;
              idempotencyKey: string;
              payload: Record<string, unknown>;
            },
        )
    : [];

/** Every PII or secret string of the support desk's fixtures. */
export const sensitive = supportDeskFixtures().sensitiveStrings;

/** The sensitive strings found in every file of a directory (the event log, summaries). */
export function leaksIn(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const text = readFileSync(join(dir, name), "utf8").toLowerCase();
    for (const value of sensitive)
      if (text.includes(value.toLowerCase())) found.push(`${value.slice(0, 6)}… in ${name}`);
  }
  return found;
}
