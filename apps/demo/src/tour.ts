import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { RunResult } from "@loopguard/core";
import { type Colors, osUser, runSummary } from "./cli-context.js";
import { type DemoAgentOptions, type DemoPaths, demoAgent, newRunId } from "./demo-agent.js";
import { invocation } from "./invocation.js";
import { narrator, statusWords, usd } from "./narrate.js";
import { fitLine, terminalWidth, wrapText } from "./terminal-width.js";

/** Options of the guided tour (`loopguard demo --tour`). */
export interface TourOptions {
  paths: DemoPaths;
  /** The `--dir` as given, for the commands the tour suggests. */
  dir: string;
  out: (line: string) => void;
  colors: Colors;
  stepDelayMs?: number;
}

const task = (orderId: string) => `Hi, order ${orderId} arrived broken. Can I get a refund?`;

/**
 * The whole story in one command: four short runs of the support agent, each showing one thing
 * loopguard does (a blocked injection with redacted data, an approval parked then given, a
 * budget stop, a crash and resume), each introduced and explained as it happens.
 * Resolves with the exit code: 0 when every chapter ended as it should.
 */
export async function tour(options: TourOptions): Promise<number> {
  const { out, colors, paths } = options;
  const width = terminalWidth();
  const paragraph = (text: string, indent = "") => {
    for (const line of wrapText(text, width, indent)) out(colors.dim(line));
  };
  const dirFlag = options.dir === ".loopguard/runs" ? "" : ` --dir ${options.dir}`;
  const agentFor = (runId: string, orderId: string, extra: Partial<DemoAgentOptions> = {}) =>
    demoAgent({
      paths,
      runId,
      orderId,
      stepDelayMs: options.stepDelayMs ?? 0,
      onEvent: narrator(colors, (line) => out(`  ${line}`), { width: width - 2 }),
      ...extra,
    });
  const chapter = (number: number, title: string, lines: string[]) => {
    out("");
    out(
      colors.bold(
        colors.cyan(
          fitLine(
            `── ${number}/4 ${title} ${"─".repeat(Math.max(2, width - 8 - title.length))}`,
            width,
          ),
        ),
      ),
    );
    paragraph(lines.join(" "));
    out("");
  };
  const recap: string[] = [];
  let ok = true;
  const expect = (what: string, holds: boolean, detail: string) => {
    ok &&= holds;
    recap.push(`${holds ? colors.green("✓") : colors.red("✗")} ${what}: ${detail}`);
  };

  out(
    colors.bold(
      fitLine("loopguard demo --tour: Acme Shop's support agent, four short runs", width),
    ),
  );
  paragraph(
    "The model is scripted and offline (no API key, no network): it obeys every instruction it reads, so whatever it does not get to do was stopped by loopguard. State goes to " +
      paths.runs,
  );

  // 1. Injection and redaction.
  chapter(1, "A poisoned help article: injection blocked, personal data redacted", [
    "The customer asks for a refund. The help article the agent reads was edited by an attacker: it",
    "tells AI assistants to email the customer list to an outside address. Watch for ⚠ (the scanner",
    "flags the article), ✗ BLOCKED send_email (the policy only allows emails to acme-shop.com) and",
    "tokens such as <EMAIL_1> (the address never reaches the log).",
  ]);
  {
    const runId = newRunId();
    const demo = await agentFor(runId, "A1001");
    const result = await demo.agent.run(task("A1001"), { runId });
    out(runSummary(colors, result, demo));
    const refunds = effectsOf(demo, runId, "refund");
    expect(
      "injection",
      result.blocked.some((call) => call.tool === "send_email") &&
        effectsOf(demo, runId, "email") === 0,
      "the exfiltration email was refused, no email sent",
    );
    expect(
      "refund",
      refunds === 1,
      refunds === 1
        ? "the refund the customer asked for was paid once"
        : `the refund was paid ${refunds} times`,
    );
  }

  // 2. Approval.
  chapter(2, "A $649 refund needs a person: the run parks, then someone approves it", [
    "The policy says refunds over $500 need a person. The run stops and waits, durably: it could wait",
    "for days, across restarts. Then a person answers (here the tour answers as you, the OS user",
    `${osUser()}, just as: ${invocation()} approve <runId>${dirFlag} would) and the run continues.`,
  ]);
  {
    const runId = newRunId();
    const parked = await (await agentFor(runId, "A1002")).agent.run(task("A1002"), { runId });
    out(colors.yellow(`  ⏸ the run is parked: ${statusWords(parked)}; nothing was paid yet`));
    out("");
    const approveCommand = `  $ ${invocation()} approve ${runId}${dirFlag}`;
    const answeredBy = `(answered by ${osUser()})`;
    if (approveCommand.length + 4 + answeredBy.length <= width)
      out(colors.dim(`${approveCommand}    ${answeredBy}`));
    else out(colors.dim(`${approveCommand}\n    ${answeredBy}`));
    const demo = await agentFor(runId, "A1002");
    const result = await demo.agent.approve(runId, { decision: "approve", approver: osUser() });
    out(runSummary(colors, result, demo));
    expect(
      "approval",
      parked.status === "awaiting_approval" &&
        result.status === "completed" &&
        effectsOf(demo, runId, "refund") === 1,
      `parked as ${parked.status}, then ${result.status} after the approval; $649 paid once`,
    );
  }

  // 3. Budget stop.
  const cap = 0.012;
  chapter(3, `A budget stop: the same task with a ${usd(cap)} cap`, [
    "Before every model call loopguard prices the worst case (the whole prompt plus max_tokens of",
    "output) and refuses a call that could cross the run's cap. Here the refund is paid in step 2; the",
    "third call, which would write the reply, could cross the cap, so the run stops as `stopped` and",
    "spends nothing more: a cap is never crossed, even though the worst case is far above what the",
    "call would really cost. Real runs set caps in dollars, steps, tokens and wall-clock time.",
  ]);
  {
    const runId = newRunId();
    const demo = await agentFor(runId, "A1001", { budget: { maxUsd: cap, maxSteps: 15 } });
    const result: RunResult = await demo.agent.run(task("A1001"), { runId });
    out(runSummary(colors, result, demo));
    expect(
      "budget",
      result.status === "stopped" && result.costUsd <= cap,
      `${statusWords(result)}; spent ${usd(result.costUsd)} of ${usd(cap)}`,
    );
  }

  // 4. Crash and resume.
  chapter(4, "A crash: the process is killed mid-run, then the run is resumed", [
    "A second process runs the same task and is killed with SIGKILL at the worst moment: the refund has",
    "been paid, but its result never reached the log. This process then resumes the run from the log:",
    "finished calls are reused, the refund is called again with the same idempotency key, and the",
    "payments ledger (as a real payments API would) recognises the key: the customer is paid once.",
  ]);
  {
    const crashed = await crashInChild(paths, options.dir, colors, out);
    if (!crashed) {
      expect("crash and resume", false, "the crashing process did not print its run id");
    } else {
      out("");
      out(colors.dim(`  $ ${invocation()} resume ${crashed}${dirFlag}`));
      const demo = await agentFor(crashed, "A1001");
      const result = await demo.agent.resume(crashed);
      out(runSummary(colors, result, demo));
      const refunds = effectsOf(demo, crashed, "refund");
      expect(
        "crash and resume",
        result.status === "completed" && refunds === 1,
        `${result.status} after the resume; refund paid ${refunds === 1 ? "once" : `${refunds} times`}`,
      );
    }
  }

  closing({ out, colors, width, recap, dirFlag });
  return ok ? 0 : 1;
}

function effectsOf(
  demo: Awaited<ReturnType<typeof demoAgent>>,
  runId: string,
  kind: "refund" | "email",
): number {
  return demo.desk.ledger.effects.filter(
    (effect) => effect.kind === kind && effect.idempotencyKey.startsWith(`${runId}:`),
  ).length;
}

/** Runs `loopguard demo --crash-after 11` in a child process; resolves with its run id. */
function crashInChild(
  paths: DemoPaths,
  dir: string,
  colors: Colors,
  out: (line: string) => void,
): Promise<string | undefined> {
  const cli = fileURLToPath(new URL("./cli.js", import.meta.url));
  if (!existsSync(cli)) {
    out(
      colors.red(
        `  the built CLI (${cli}) is missing: build it with pnpm --filter loopguard build`,
      ),
    );
    return Promise.resolve(undefined);
  }
  out(
    colors.dim(
      `  $ ${invocation()} demo --crash-after 11${dir === ".loopguard/runs" ? "" : ` --dir ${dir}`}`,
    ),
  );
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [cli, "demo", "--crash-after", "11", "--dir", paths.runs],
      {
        stdio: ["ignore", "pipe", "inherit"],
        env: {
          ...process.env,
          // Its lines are shown behind "  │ ": the child fits them to what is left.
          COLUMNS: String(terminalWidth() - 4),
          ...(colors.isColorSupported ? { FORCE_COLOR: "1" } : { NO_COLOR: "1" }),
        },
      },
    );
    let all = "";
    let pending = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      all += chunk;
      const lines = (pending + chunk).split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) out(`  │ ${line}`);
    });
    child.on("close", (code, signal) => {
      if (pending) out(`  │ ${pending}`);
      out(
        colors.red(
          `  the process died (${signal ?? `exit ${code}`}): its run is left half done in the log`,
        ),
      );
      const plain = all.replace(/\u001b\[[0-9;]*m/g, "");
      resolve(/▶ run (run_[0-9a-f]{16})/.exec(plain)?.[1]);
    });
  });
}

/** The tour's last words: what each chapter showed, and the commands to try next. */
function closing(parts: {
  out: (line: string) => void;
  colors: Colors;
  width: number;
  recap: readonly string[];
  dirFlag: string;
}): void {
  const { out, colors, width, recap, dirFlag } = parts;
  out("");
  out(colors.bold("What the tour showed"));
  for (const line of recap) {
    // Hanging indent: "  ✓ what: ..." and the rest under the text.
    const [first, ...more] = wrapText(line, width, "    ");
    out(`  ${first!.trimStart()}`);
    for (const part of more) out(part);
  }
  out("");
  out(colors.bold("Try next"));
  const cli = invocation();
  const next: Array<[string, string]> = [
    [`${cli} runs${dirFlag}`, "every run above, with status and cost"],
    [`${cli} trace <runId>${dirFlag}`, "a run's spans as trace.json and a single-file trace.html"],
    [`${cli} eval`, "the scorecard: each defence switched off must fail a scenario"],
    [`${cli} <command> --help`, "what each command does"],
  ];
  // A command is never cut (it is to be copied): its explanation goes under it when both do
  // not fit on one line.
  const column = Math.max(...next.map(([command]) => command.length)) + 3;
  for (const [command, what] of next) {
    if (2 + column + what.length <= width) out(`  ${command.padEnd(column)}${colors.dim(what)}`);
    else {
      out(`  ${command}`);
      for (const line of wrapText(what, width, "      ")) out(colors.dim(line));
    }
  }
}
