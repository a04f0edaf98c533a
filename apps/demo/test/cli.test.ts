import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { built, cli, leaksIn, ledgerOf, run, runIdOf, sensitive, start } from "./cli-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "loopguard-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each test starts CLI processes: deadlines far above any machine's pace, never a bound on it.
describe.skipIf(!built)("the built loopguard CLI", { timeout: 600_000 }, () => {
  it("runs the demo: the exfiltration is blocked, one refund is paid, no PII in the log", () => {
    const root = join(dir, "a");
    const result = run(["demo", "--dir", join(root, "runs")]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("send_email BLOCKED (policy_deny at pipeline step 2");
    expect(result.stdout).toMatch(/refunds\s+A1001 \$89\.99/);
    expect(result.stdout).toMatch(/emails\s+none/);
    for (const value of sensitive) expect(result.stdout).not.toContain(value);
    expect(leaksIn(join(root, "runs"))).toEqual([]);
    const runId = runIdOf(result.stdout);
    expect(readFileSync(join(root, "runs", `${runId}.jsonl`), "utf8")).toMatch(/<EMAIL_\d+>/);
    // The vault that can reveal the tokens is readable by its owner only.
    expect(statSync(join(root, "vault")).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, "vault", `${runId}.jsonl`)).mode & 0o777).toBe(0o600);
  });

  it("dies for real at --crash-after; resume in a new process pays once and keeps PII out of the log", () => {
    const root = join(dir, "b");
    const runs = join(root, "runs");
    const crashed = run(["demo", "--crash-after", "6", "--dir", runs]);
    expect(crashed.signal ?? crashed.status).toMatch(/SIGKILL|137/);
    const runId = runIdOf(crashed.stdout);
    const resumed = run(["resume", runId, "--dir", runs]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("completed");
    // The answer names the receipt address: a token the resumed process revealed from the vault file.
    expect(resumed.stdout).toMatch(/answer\s+Your refund for order A1001 is on its way/);
    expect(ledgerOf(root).filter((effect) => effect.kind === "refund")).toHaveLength(1);
    expect(leaksIn(runs)).toEqual([]);
    expect(run(["runs", "--dir", runs]).stdout).toContain(runId);
  });

  it("a parked approval survives the process: approved, denied or unreadable from a new process", () => {
    const root = join(dir, "c");
    const runs = join(root, "runs");
    const park = () => {
      const parked = run(["demo", "--order", "A1002", "--dir", runs]);
      expect(parked.status, parked.stderr).toBe(0);
      expect(parked.stdout).toMatch(/status\s+awaiting_approval\s/);
      // A parked run has no answer yet, and its status is not repeated as its reason.
      expect(parked.stdout).not.toContain("awaiting_approval (awaiting_approval)");
      expect(parked.stdout).not.toMatch(/│ (answer|partial)\s/);
      return runIdOf(parked.stdout);
    };
    const refundsOf = (runId: string) =>
      ledgerOf(root).filter(
        (effect) => effect.kind === "refund" && effect.idempotencyKey.startsWith(`${runId}:`),
      );

    const approvedId = park();
    expect(refundsOf(approvedId)).toHaveLength(0);
    const approved = run(["approve", approvedId, "--as", "dana", "--dir", runs]);
    expect(approved.status, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(/status\s+completed/);
    expect(refundsOf(approvedId).map((effect) => effect.payload.amount)).toEqual([649]);

    const deniedId = park();
    const denied = run(["approve", deniedId, "--deny", "--as", "sam", "--dir", runs]);
    expect(denied.status, denied.stderr).toBe(0);
    expect(denied.stdout).toMatch(/issue_refund: approval_denied/);
    expect(denied.stdout).not.toMatch(/status\s+awaiting_approval/);
    expect(refundsOf(deniedId)).toHaveLength(0);

    // Only approve or deny is an answer: anything else is refused before it reaches the log,
    // and the run still waits.
    const unreadableId = park();
    const unreadable = run(["approve", unreadableId, "--answer", "yes please", "--dir", runs]);
    expect(unreadable.status).toBe(2);
    expect(unreadable.stderr).toContain("--answer takes approve or deny");
    const listed = run(["runs", "--dir", runs]).stdout;
    expect(listed).toMatch(new RegExp(`${unreadableId}\\s+awaiting_approval`));
    // Without --as the log names the OS user, not the tool.
    const byUser = run(["approve", unreadableId, "--answer", "APPROVE", "--dir", runs]);
    expect(byUser.status, byUser.stderr).toBe(0);
    expect(byUser.stdout).toMatch(/status\s+completed/);
    const log = readFileSync(join(runs, `${unreadableId}.jsonl`), "utf8");
    expect(log).toContain(`"approver":${JSON.stringify(userInfo().username)}`);
    expect(log).not.toContain('"approver":"cli"');
    expect(refundsOf(unreadableId)).toHaveLength(1);
    expect(leaksIn(runs)).toEqual([]);
  });

  it("a freeze from another process halts a running run at its next call", async () => {
    const root = join(dir, "d");
    const runs = join(root, "runs");
    // --step holds each model step until a line arrives: the freeze lands while the run waits
    // before its first call, however slow the machine (no race with a timer).
    const demo = start(["demo", "--step", "--dir", runs], {}, { stdin: "pipe" });
    await demo.waitFor(/⏸ model step 1/);
    expect(demo.output()).toMatch(/▶ run/);
    const frozen = run(["freeze", "--reason", "refund bug in production", "--dir", runs]);
    expect(frozen.status, frozen.stderr).toBe(0);
    demo.child.stdin!.end("\n");
    const { code } = await demo.exited;
    const output = demo.output();
    expect(code, output).toBe(0);
    expect(output).toContain("lookup_order BLOCKED (kill_switch");
    expect(output).toMatch(/status\s+halted .*halt: kill_switch/);
    expect(ledgerOf(root)).toHaveLength(0);
    expect(run(["unfreeze", "--dir", runs]).status).toBe(0);
    const after = run(["demo", "--dir", runs]);
    expect(after.stdout).toMatch(/refunds\s+A1001 \$89\.99/);
  });

  it("demo --tour tells the whole story in one run: injection, redaction, approval, budget stop, crash and resume", () => {
    const root = join(dir, "tour");
    const runs = join(root, "runs");
    // Not a terminal and no usable COLUMNS: 80 columns.
    const tour = run(["demo", "--tour", "--dir", runs], { COLUMNS: "" });
    expect(tour.status, tour.stderr + tour.stdout).toBe(0);
    // Every line fits, except a command to copy (it names the --dir path and is never cut).
    const wide = tour.stdout
      .split("\n")
      .filter((line) => Array.from(line).length > 80 && !line.includes(` --dir ${runs}`));
    expect(wide).toEqual([]);
    // Each allowed call is one short line; what the checks are is said once.
    const allowed = tour.stdout.split("\n").filter((line) => /✓ \w+ allowed/.test(line));
    expect(allowed.length).toBeGreaterThan(3);
    for (const line of allowed)
      expect(line).toMatch(/^[ │]+✓ \w+ allowed \(\d+ checks; logged before it runs\)$/);
    // Once per run that had an allowed call (the crash's child process is a run of its own).
    expect(tour.stdout.match(/checks: kill switch/g)!.length).toBeLessThan(allowed.length);
    const recap = tour.stdout.slice(tour.stdout.indexOf("What the tour showed"));
    for (const chapter of ["injection", "refund", "approval", "budget", "crash and resume"])
      expect(recap).toMatch(new RegExp(`✓ ${chapter}:`));
    expect(recap).not.toContain("✗");
    expect(tour.stdout).toContain("🔒 redacted:");
    expect(tour.stdout).toContain("send_email BLOCKED (policy_deny");
    expect(tour.stdout).toMatch(/status\s+stopped \(a budget cap was reached/);
    expect(tour.stdout).toContain("SIGKILL");
    expect(tour.stdout).toMatch(/Finish with: loopguard resume run_[0-9a-f]{16} --dir /);
    expect(tour.stdout).not.toContain("<runId>`");
    // No float noise in what people read.
    expect(tour.stdout).not.toMatch(/\$\d+\.\d{5,}/);
    for (const value of sensitive) expect(tour.stdout).not.toContain(value);
    expect(leaksIn(runs)).toEqual([]);
    // Each run paid what it should, once: A1001 three times (injection, budget, crash) and A1002 once.
    const refunds = ledgerOf(root).filter((effect) => effect.kind === "refund");
    expect(refunds.map((effect) => effect.payload.order_id).sort()).toEqual([
      "A1001",
      "A1001",
      "A1001",
      "A1002",
    ]);
    expect(ledgerOf(root).filter((effect) => effect.kind === "email")).toEqual([]);
  });

  it("trace writes trace.json and trace.html, or OTLP/JSON with --format otlp, without PII", () => {
    const root = join(dir, "e");
    const runs = join(root, "runs");
    const runId = runIdOf(run(["demo", "--dir", runs]).stdout);
    const out = join(root, "trace");
    const traced = run(["trace", runId, "--out", out, "--dir", runs]);
    expect(traced.status, traced.stderr).toBe(0);
    const json = readFileSync(join(out, "trace.json"), "utf8");
    const html = readFileSync(join(out, "trace.html"), "utf8");
    expect(JSON.parse(json)).toBeTypeOf("object");
    expect(json).toContain("issue_refund");
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain(runId);
    expect(leaksIn(out)).toEqual([]);
    expect(run(["trace", "run_0000000000000000", "--dir", runs]).status).toBe(2);

    // --format otlp: OTLP/JSON (resourceSpans) with the tree whole: every parent is in the file.
    const otlp = run(["trace", runId, "--format", "otlp", "--out", out, "--dir", runs]);
    expect(otlp.status, otlp.stderr).toBe(0);
    expect(otlp.stdout).toMatch(/trace\.otlp\.json \(\d+ spans, OTLP\/JSON\)/);
    const file = JSON.parse(readFileSync(join(out, "trace.otlp.json"), "utf8")) as {
      resourceSpans: Array<{
        scopeSpans: Array<{
          spans: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string }>;
        }>;
      }>;
    };
    const spans = file.resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(spans.map((span) => span.name)).toContain("execute_tool issue_refund");
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1);
    const ids = new Set(spans.map((span) => span.spanId));
    expect(ids.size).toBe(spans.length);
    for (const span of spans) {
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      if (span.parentSpanId) expect(ids.has(span.parentSpanId), span.name).toBe(true);
    }
    expect(spans.filter((span) => !span.parentSpanId).map((span) => span.name)).toEqual([
      "invoke_agent support-desk",
    ]);
    expect(leaksIn(out)).toEqual([]);
    const wrong = run(["trace", runId, "--format", "xml", "--dir", runs]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain("--format takes html or otlp");
  });

  it("eval --json scores the scenarios with the HTML trace in the leak scan", () => {
    const result = run(["eval", "--json", "--only", "injection_refund_hijack_blocked"]);
    expect(result.status, result.stderr).toBe(0);
    const card = JSON.parse(result.stdout) as {
      ok: boolean;
      results: Array<{
        name: string;
        status: string;
        checks: Array<{ name: string; ok: boolean }>;
      }>;
    };
    expect(card.ok).toBe(true);
    expect(card.results.map((item) => [item.name, item.status])).toEqual([
      ["injection_refund_hijack_blocked", "PASS"],
    ]);
    expect(card.results[0]!.checks.map((check) => check.name)).toContain("no_pii_in_observability");
  });

  it("exits 2 with a clear error on a bad flag", () => {
    const bad = run(["demo", "--crash-after", "zero"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--crash-after must be a positive integer");
    expect(run(["frobnicate"]).status).toBe(2);
    const worker = run(["worker"], { DATABASE_URL: "" });
    expect(worker.status).toBe(2);
    expect(worker.stderr).toMatch(/createWorker|DATABASE_URL/);
    expect(run(["approve", "run_x", "--deny", "--answer", "approve"]).status).toBe(2);
    // An unreachable database names the URL (without its password) and how to start one.
    for (const command of [["submit", "Order A1001 arrived broken"], ["worker"]]) {
      const unreachable = run([
        ...command,
        "--connection",
        "postgres://bob:hunter2@127.0.0.1:1/nowhere",
      ]);
      expect(unreachable.status).toBe(1);
      expect(unreachable.stderr).toContain(
        "could not connect to PostgreSQL at postgres://bob:***@127.0.0.1:1/nowhere",
      );
      expect(unreachable.stderr).toContain("scripts/postgres.sh start");
      expect(unreachable.stderr).not.toContain("hunter2");
      expect(unreachable.stderr).not.toContain("unexpected error");
    }
  });

  it("runs through a symlinked bin, as npm and pnpm install it", () => {
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    symlinkSync(cli, join(bin, "loopguard"));
    const help = spawnSync(process.execPath, [join(bin, "loopguard"), "--help"], {
      encoding: "utf8",
    });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain("loopguard demo");
    const bad = spawnSync(process.execPath, [join(bin, "loopguard"), "frobnicate"], {
      encoding: "utf8",
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("[loopguard] unknown command 'frobnicate'");
  });

  // About twenty CLI processes one after another: a deadline far above any machine's pace.
  it("--help of every command prints its usage and runs nothing; --version prints the version", {
    timeout: 600_000,
  }, () => {
    const root = join(dir, "f");
    const runs = join(root, "runs");
    const top = run(["--help"]);
    expect(top.status, top.stderr).toBe(0);
    const listed = [...top.stdout.matchAll(/^ {2}([a-z-]+) (?:\[options\]|<|\[command\])/gm)]
      .map((match) => match[1]!)
      .filter((name) => name !== "help");
    expect(listed).toEqual(
      expect.arrayContaining(["demo", "eval", "freeze", "unfreeze", "worker"]),
    );
    const frozen = run(["freeze", "--reason", "checking help", "--dir", runs]);
    expect(frozen.status, frozen.stderr).toBe(0);
    const asked = [
      ...listed.map((command) => [command, "--help"]),
      ["help", "unfreeze"],
      ["demo", "-h"],
    ];
    for (const help of asked) {
      const command = help[0] === "help" ? help[1]! : help[0]!;
      {
        const printed = run([...help, "--dir", runs], { DATABASE_URL: "" });
        expect(printed.status, `${help.join(" ")}: ${printed.stderr}`).toBe(0);
        expect(printed.stdout).toMatch(new RegExp(`^Usage: loopguard ${command}`));
      }
    }
    // Nothing ran: the fleet is still frozen, no run was started, no state was written.
    expect(readFileSync(join(root, "freeze.json"), "utf8")).toContain("checking help");
    expect(run(["runs", "--dir", runs]).stdout).toContain("no runs in");
    const version = run(["--version"]);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe(
      (
        JSON.parse(readFileSync(join(import.meta.dirname, "../package.json"), "utf8")) as {
          version: string;
        }
      ).version,
    );
    const unknown = run(["demo", "--frobnicate"]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
    expect(unknown.stderr).toContain("loopguard demo --help");
  });
});
