import type { Command } from "commander";
import { type CliShared, orderOfRun, pathsOf, runSummary, withDir } from "../cli-context.js";
import { demoAgent } from "../demo-agent.js";
import { narrator } from "../narrate.js";

/** `loopguard resume <runId>`: finishes a crashed or interrupted run from its log. */
export function register(program: Command, { out, colors, exit }: CliShared): void {
  withDir(
    program
      .command("resume")
      .description(
        "finish a crashed run from its event log: finished tool calls are reused, none is repeated",
      )
      .argument("<runId>", "the run to resume (see: loopguard runs)"),
  ).action(async (runId: string, options: { dir: string }) => {
    const paths = pathsOf(options);
    const demo = await demoAgent({
      paths,
      runId,
      orderId: await orderOfRun(paths, runId),
      onEvent: narrator(colors, out),
    });
    const result = await demo.agent.resume(runId);
    out(runSummary(colors, result, demo));
    exit(result.status === "failed" ? 1 : 0);
  });
}
