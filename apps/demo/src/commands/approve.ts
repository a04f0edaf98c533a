import { approveRun } from "@loopguard/core";
import { type Command, InvalidArgumentError, Option } from "commander";
import {
  type CliShared,
  orderOfRun,
  osUser,
  pathsOf,
  runSummary,
  withDir,
} from "../cli-context.js";
import { demoAgent } from "../demo-agent.js";
import { guardedRunSummary, isGuardedRun } from "../guarded-run-summary.js";
import { narrator } from "../narrate.js";
import { UsageError } from "../usage-error.js";

const decisionOf = (value: string): "approve" | "deny" => {
  const decision = value.trim().toLowerCase();
  if (decision === "approve" || decision === "deny") return decision;
  throw new InvalidArgumentError(
    `--answer takes approve or deny, got ${JSON.stringify(value.slice(0, 60))} (nothing was recorded; the run still waits)`,
  );
};

/** `loopguard approve <runId>`: answers a parked approval and continues the run. */
export function register(program: Command, { out, colors }: CliShared): void {
  withDir(
    program
      .command("approve")
      .description("answer a run that waits for a human approval, then continue it")
      .argument("<runId>", "the run that waits (its summary says: awaiting_approval)")
      .addOption(
        new Option("--deny", "refuse the call instead of approving it").conflicts("answer"),
      )
      .addOption(
        new Option(
          "--answer <decision>",
          "approve or deny (the same as --deny when deny)",
        ).argParser(decisionOf),
      )
      .option("--as <name>", "who answers, recorded in the log (default: your OS user name)")
      .option("--request <id>", "which request to answer when a run waits on more than one")
      .option("--note <text>", "a note kept with the decision"),
  ).action(
    async (
      runId: string,
      options: {
        dir: string;
        deny?: boolean;
        answer?: "approve" | "deny";
        as?: string;
        request?: string;
        note?: string;
      },
    ) => {
      const paths = pathsOf(options);
      // A guarded run (the MCP proxy's, an adapter's) is answered and summarised as such.
      const { store } = await demoAgent({ paths });
      const events = await store.read(runId);
      if (isGuardedRun(events)) {
        const end = events.findLast((event) => event.type === "run-end");
        if (end)
          throw new UsageError(
            `run ${runId} has ended (${end.status}: ${end.why}); its open approval requests were withdrawn, so there is nothing to answer. Make the call again in a new run.`,
          );
        await approveRun({
          store,
          runId,
          answer: {
            decision: options.answer ?? (options.deny ? "deny" : "approve"),
            approver: options.as ?? osUser(),
            ...(options.request !== undefined ? { requestId: options.request } : {}),
            ...(options.note !== undefined ? { note: options.note } : {}),
          },
        });
        for (const line of guardedRunSummary(colors, runId, await store.read(runId), options.dir))
          out(line);
        return;
      }
      const demo = await demoAgent({
        paths,
        runId,
        orderId: await orderOfRun(paths, runId),
        onEvent: narrator(colors, out),
      });
      const result = await demo.agent.approve(runId, {
        decision: options.answer ?? (options.deny ? "deny" : "approve"),
        approver: options.as ?? osUser(),
        ...(options.request !== undefined ? { requestId: options.request } : {}),
        ...(options.note !== undefined ? { note: options.note } : {}),
      });
      out(runSummary(colors, result, demo));
    },
  );
}
