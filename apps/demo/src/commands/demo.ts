import { createInterface } from "node:readline";
import type { Command } from "commander";
import { type CliShared, pathsOf, positiveInt, runSummary, withDir } from "../cli-context.js";
import { demoAgent, newRunId } from "../demo-agent.js";
import { invocation } from "../invocation.js";
import { narrator } from "../narrate.js";
import { fitLine, terminalWidth, wrapText } from "../terminal-width.js";
import { UsageError } from "../usage-error.js";

/** `loopguard demo`: the support agent reads a poisoned help article; every defence narrates. */
export function register(program: Command, { out, colors, exit }: CliShared): void {
  withDir(
    program
      .command("demo")
      .description("run the support-desk agent offline against a poisoned help article")
      .option(
        "--tour",
        "the whole story: four short runs (injection and redaction, approval, budget stop, crash and resume)",
      )
      .option(
        "--order <id>",
        "the order the customer complains about (A1002 needs an approval)",
        "A1001",
      )
      .option(
        "--crash-after <n>",
        "kill the process after N durable appends (then: loopguard resume)",
        positiveInt("--crash-after"),
      )
      .option(
        "--step-delay <ms>",
        "latency of each model step, as a real model has",
        positiveInt("--step-delay", 60_000),
        0,
      )
      .option(
        "--step",
        "wait for Enter before each model step (follow along, or freeze the fleet mid-run); end of input runs the rest",
      ),
  ).action(
    async (options: {
      order: string;
      crashAfter?: number;
      stepDelay: number;
      dir: string;
      tour?: boolean;
      step?: boolean;
    }) => {
      if (options.tour) {
        if (options.crashAfter !== undefined || options.order !== "A1001" || options.step)
          throw new UsageError(
            "--tour runs its own orders and crash: leave out --order, --crash-after and --step",
          );
        const { tour } = await import("../tour.js");
        exit(
          await tour({
            paths: pathsOf(options),
            dir: options.dir,
            out,
            colors,
            stepDelayMs: options.stepDelay,
          }),
        );
        return;
      }
      if (!/^A\d{4}$/.test(options.order))
        throw new UsageError(
          `--order must be an order id such as A1001 or A1002, got ${JSON.stringify(options.order)}`,
        );
      const crash = options.crashAfter;
      const runId = newRunId();
      const stepper = options.step ? enterStepper(out, colors) : undefined;
      const demo = await demoAgent({
        paths: pathsOf(options),
        runId,
        orderId: options.order,
        stepDelayMs: options.stepDelay,
        ...(stepper ? { beforeStep: stepper.wait } : {}),
        onEvent: narrator(colors, out),
        ...(crash
          ? {
              crashAfter: crash,
              onCrash: () =>
                out(
                  colors.red(
                    colors.bold(
                      `💥 simulated crash after ${crash} durable append${crash === 1 ? "" : "s"}: the process dies now (SIGKILL).\nFinish with: ${invocation()} resume ${runId}${options.dir === ".loopguard/runs" ? "" : ` --dir ${options.dir}`}`,
                    ),
                  ),
                ),
            }
          : {}),
      });
      out(
        colors.bold(
          fitLine(
            "loopguard demo: Acme Shop's support agent reads a poisoned help article",
            terminalWidth(),
          ),
        ),
      );
      for (const line of wrapText(`defences: ${demo.active.join(", ")}`, terminalWidth(), "  "))
        out(colors.dim(line.startsWith("  defences:") ? line.trimStart() : line));
      const result = await demo.agent
        .run(`Hi, order ${options.order} arrived broken. Can I get a refund?`, { runId })
        .finally(() => stepper?.close());
      out(runSummary(colors, result, demo));
      // Each command on a line of its own, never wrapped: it is there to be copied.
      if (result.status === "awaiting_approval") {
        out(colors.dim("next: a person answers it (add --deny to refuse):"));
        out(
          colors.dim(
            `  ${invocation()} approve ${runId}${options.dir === ".loopguard/runs" ? "" : ` --dir ${options.dir}`}`,
          ),
        );
      }
      out(colors.dim("the whole story (approval, budget stop, crash and resume):"));
      out(colors.dim(`  ${invocation()} demo --tour`));
      exit(result.status === "failed" ? 1 : 0);
    },
  );
}

/**
 * Waits for one line of standard input per model step (`--step`). At the end of input every
 * later step goes on at once, so `demo --step < /dev/null` runs straight through.
 */
function enterStepper(
  out: (line: string) => void,
  colors: CliShared["colors"],
): { wait: (step: number) => Promise<void>; close: () => void } {
  const lines = createInterface({ input: process.stdin, terminal: false });
  const waiting: Array<() => void> = [];
  let buffered = 0;
  let ended = false;
  lines.on("line", () => {
    const next = waiting.shift();
    if (next) next();
    else buffered += 1;
  });
  lines.on("close", () => {
    ended = true;
    for (const next of waiting.splice(0)) next();
  });
  return {
    wait: (step) => {
      if (ended) return Promise.resolve();
      if (buffered > 0) {
        buffered -= 1;
        return Promise.resolve();
      }
      out(colors.dim(`⏸ model step ${step}: press Enter to go on`));
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => lines.close(),
  };
}
