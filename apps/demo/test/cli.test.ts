import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const cli = resolve(import.meta.dirname, "../dist/cli.js");
const dir = mkdtempSync(join(tmpdir(), "loopguard-cli-"));
const run = (args: string[]) =>
  spawnSync(process.execPath, [cli, ...args], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
    timeout: 30_000,
  });

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!existsSync(cli))("the built loopguard CLI", () => {
  it("runs the demo: the exfiltration is blocked and one refund is paid", () => {
    const result = run(["demo", "--dir", join(dir, "a", "runs")]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("BLOCKED send_email policy_deny");
    expect(result.stdout).toMatch(/refunds\s+A1001 \$89\.99/);
    expect(result.stdout).toMatch(/emails\s+none/);
    expect(result.stdout).not.toContain("maya.lindqvist@mailbox.example");
  });

  it("dies for real at --crash-after, and resume finishes with exactly one refund", () => {
    const runs = join(dir, "b", "runs");
    const crashed = run(["demo", "--crash-after", "6", "--dir", runs]);
    expect(crashed.signal ?? crashed.status).toMatch(/SIGKILL|137/);
    const runId = readdirSync(runs)[0]!.replace(/\.jsonl$/, "");
    const resumed = run(["resume", runId, "--dir", runs]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("completed");
    const ledger = readFileSync(join(dir, "b", "ledger.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(ledger.filter((effect) => effect.kind === "refund")).toHaveLength(1);
    expect(run(["runs", "--dir", runs]).stdout).toContain(runId);
  });

  it("exits 2 with a clear error on a bad flag", () => {
    const bad = run(["demo", "--crash-after", "zero"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--crash-after must be a positive integer");
    expect(run(["frobnicate"]).status).toBe(2);
    expect(run(["worker"]).status).toBe(2);
  });
});
