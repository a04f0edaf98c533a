import { spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pc from "picocolors";
import { afterAll, describe, expect, it } from "vitest";
import { invocation } from "../src/invocation.js";
import { narrator } from "../src/narrate.js";
import { fitLine, terminalWidth, visibleWidth, wrapText } from "../src/terminal-width.js";
import { built, cli, run, runIdOf } from "./cli-helpers.js";

// The papercuts a new user met in the first hour (the README's quick start and CLI), each held by a test.
const dir = mkdtempSync(join(tmpdir(), "loopguard-first-hour-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const repository = resolve(import.meta.dirname, "../../..");

// Tests that run CLI processes get 90 s each: slow on a loaded machine.
describe("the first hour's papercuts", { timeout: 600_000 }, () => {
  it("output width: COLUMNS when usable, else the terminal's, else 80; lines are cut or wrapped to it", () => {
    expect(terminalWidth({ COLUMNS: "120" }, { isTTY: false })).toBe(120);
    expect(terminalWidth({}, { isTTY: false })).toBe(80);
    expect(terminalWidth({ COLUMNS: "banana" }, { isTTY: true, columns: 100 })).toBe(100);
    expect(terminalWidth({ COLUMNS: "5" }, { isTTY: false })).toBe(80);
    expect(fitLine("x".repeat(100), 10)).toBe(`${"x".repeat(9)}…`);
    // Colour codes do not count, and a cut resets them.
    const coloured = `\u001b[32m${"y".repeat(50)}\u001b[39m`;
    expect(visibleWidth(fitLine(coloured, 20))).toBe(20);
    expect(fitLine(coloured, 20).endsWith("…\u001b[0m")).toBe(true);
    expect(fitLine("short", 10)).toBe("short");
    const wrapped = wrapText(
      `see ${"word ".repeat(30)}and /a/very/long/path/${"x".repeat(60)}`,
      40,
      "  ",
    );
    for (const line of wrapped.slice(0, -1)) expect(visibleWidth(line)).toBeLessThanOrEqual(40);
    expect(wrapped.at(-1)).toMatch(/^ {2}\/a\/very\/long\/path\/x+$/);
  });

  it("suggests commands that work where it runs: npm run loopguard -- from a clone's scripts, loopguard otherwise", () => {
    expect(invocation({ npm_lifecycle_event: "demo" })).toBe("npm run loopguard --");
    expect(invocation({ npm_lifecycle_event: "loopguard" })).toBe("npm run loopguard --");
    expect(invocation({ npm_lifecycle_event: "test" })).toBe("loopguard");
    expect(invocation({})).toBe("loopguard");
  });

  it.skipIf(!built)(
    "the CLI says so when started from npm run: its next steps use npm run loopguard --",
    () => {
      const runs = join(dir, "npm", "runs");
      const parked = run(["demo", "--order", "A1002", "--dir", runs], {
        npm_lifecycle_event: "demo",
      });
      expect(parked.status, parked.stderr).toBe(0);
      const runId = runIdOf(parked.stdout);
      // The command is one line, never wrapped, however long the --dir path.
      expect(parked.stdout).toMatch(
        new RegExp(`^ {2}npm run loopguard -- approve ${runId} --dir \\S+$`, "m"),
      );
      expect(parked.stdout).not.toMatch(/(?<!-- )\bloopguard approve/);
    },
  );

  it.skipIf(!built)(
    "a reader that goes away (| head) mid-run: the CLI stops writing, finishes the run, ends with 0",
    async () => {
      const runs = join(dir, "epipe", "runs");
      // --step holds the run before its first model call: the pipe is closed while it waits,
      // and every line after that meets a closed pipe (no race with how fast the machine is).
      const child = spawn(process.execPath, [cli, "demo", "--step", "--dir", runs], {
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
      });
      let seen = "";
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          seen += chunk;
          if (seen.includes("⏸ model step 1")) resolve();
        });
        child.on("exit", () =>
          reject(new Error(`exited before the first step:\n${seen}${stderr}`)),
        );
      });
      child.stdout.destroy();
      child.stdin.end("\n");
      const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
      expect(stderr).toBe("");
      expect(code).toBe(0);
      // The CLI stopped writing, not working: the run it had started was finished, not left
      // half done.
      expect(run(["runs", "--dir", runs]).stdout).toMatch(/run_[0-9a-f]{16}\s+completed/);
    },
  );

  it.skipIf(!built)("runs --help says newest first, as the list is", () => {
    const runs = join(dir, "order", "runs");
    const first = runIdOf(run(["demo", "--dir", runs]).stdout);
    const second = runIdOf(run(["demo", "--dir", runs]).stdout);
    const help = run(["runs", "--help"]);
    expect(help.stdout).toContain("newest first");
    const listed = run(["runs", "--dir", runs]).stdout;
    expect(listed.indexOf(second)).toBeGreaterThan(-1);
    expect(listed.indexOf(second)).toBeLessThan(listed.indexOf(first));
  });

  it("npm run loopguard before set-up says what to run instead of MODULE_NOT_FOUND", () => {
    // A clone's layout with nothing installed or built: only the script.
    const clone = join(dir, "clone");
    mkdirSync(join(clone, "scripts"), { recursive: true });
    copyFileSync(
      join(repository, "scripts", "loopguard.mjs"),
      join(clone, "scripts", "loopguard.mjs"),
    );
    const result = spawnSync(
      process.execPath,
      [join(clone, "scripts", "loopguard.mjs"), "--help"],
      {
        encoding: "utf8",
      },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^\[loopguard\] this clone is not set up yet: the built CLI \(apps\/demo\/dist\/cli\.js\)/,
    );
    expect(result.stderr).toContain("npm run setup");
    expect(result.stderr).not.toContain("MODULE_NOT_FOUND");
  });

  it.skipIf(!built)(
    "npm run loopguard on a set-up clone runs the CLI and passes its exit status on",
    () => {
      const script = join(repository, "scripts", "loopguard.mjs");
      const version = spawnSync(process.execPath, [script, "--version"], { encoding: "utf8" });
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
      const bad = spawnSync(process.execPath, [script, "frobnicate"], { encoding: "utf8" });
      expect(bad.status).toBe(2);
    },
  );

  it("prepack rebuilds dist in place: the folder is never removed, changed files are replaced, stale ones deleted", () => {
    const pkg = join(dir, "pkg");
    mkdirSync(join(pkg, "src"), { recursive: true });
    mkdirSync(join(pkg, "dist", "gone"), { recursive: true });
    writeFileSync(join(pkg, "package.json"), '{ "name": "fixture", "type": "module" }');
    writeFileSync(
      join(pkg, "tsconfig.build.json"),
      JSON.stringify({
        compilerOptions: {
          outDir: "dist",
          rootDir: "src",
          module: "NodeNext",
          target: "ES2022",
          declaration: true,
          types: [],
        },
        include: ["src"],
      }),
    );
    writeFileSync(join(pkg, "src", "a.ts"), "export const a: number = 2;\n");
    writeFileSync(join(pkg, "dist", "a.js"), "export const a = 1;\n");
    writeFileSync(join(pkg, "dist", "gone", "old.js"), "export {};\n");
    const folder = statSync(join(pkg, "dist")).ino;
    const result = spawnSync(process.execPath, [join(repository, "scripts", "prepack.mjs")], {
      cwd: pkg,
      encoding: "utf8",
    });
    expect(result.status, result.stderr + result.stdout).toBe(0);
    // The same folder (never removed and made again), its files brought up to date.
    expect(statSync(join(pkg, "dist")).ino).toBe(folder);
    expect(readFileSync(join(pkg, "dist", "a.js"), "utf8")).toContain("a = 2");
    expect(existsSync(join(pkg, "dist", "a.d.ts"))).toBe(true);
    expect(existsSync(join(pkg, "dist", "gone"))).toBe(false);
    // A build that fails leaves dist as it was.
    writeFileSync(join(pkg, "src", "a.ts"), "export const a: number = 'not a number';\n");
    const failed = spawnSync(process.execPath, [join(repository, "scripts", "prepack.mjs")], {
      cwd: pkg,
      encoding: "utf8",
    });
    expect(failed.status).not.toBe(0);
    expect(failed.stderr).toContain("dist was left as it was");
    expect(readFileSync(join(pkg, "dist", "a.js"), "utf8")).toContain("a = 2");
  });

  it.skipIf(!built)("a green scorecard prints no warning of the project's own", () => {
    const scorecard = run(["eval"]);
    expect(scorecard.status, scorecard.stderr).toBe(0);
    expect(scorecard.stdout).toMatch(/\d+ passed, 0 failed/);
    expect(scorecard.stderr).not.toMatch(/LOOPGUARD_|Warning:/);
  });

  it("the narrator says what a newer API sent that this version did not read, in one line that fits", () => {
    const lines: string[] = [];
    narrator(pc.createColors(false), (line) => lines.push(line), { width: 60 })({
      seq: 3,
      at: 0,
      runId: "run_0123456789abcdef",
      type: "model-response",
      step: 1,
      response: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: [{ type: "text", text: "Hello ".repeat(30) }],
        stop_reason: "end_turn",
        usage: { input_tokens: 10, output_tokens: 5 },
      },
      costUsd: 0.0001,
      latencyMs: 5,
      attempts: 1,
      skipped: [
        { kind: "event", type: "message_checkpoint" },
        { kind: "block", type: "hologram", index: 1 },
      ],
    } as never);
    expect(
      lines.some((line) =>
        line.includes("? not read (a newer API type): event message_checkpoint"),
      ),
    ).toBe(true);
    for (const line of lines) expect(Array.from(line).length).toBeLessThanOrEqual(60);
  });
});
