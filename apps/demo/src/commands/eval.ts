import type { Span } from "@loopguard/core";
import {
  formatScorecard,
  runScenarios,
  type Sabotage,
  sabotageNames,
  scenarios,
} from "@loopguard/evals";
import { type Command, InvalidArgumentError, Option } from "commander";
import { type CliShared, positiveInt } from "../cli-context.js";
import { traceViewer } from "../trace-viewer.js";
import { UsageError } from "../usage-error.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];

const sabotageOf = (value: string, previous: Sabotage[] = []): Sabotage[] => {
  if (!(sabotageNames as readonly string[]).includes(value))
    throw new InvalidArgumentError(
      `--sabotage takes one of ${sabotageNames.join(", ")} (a defence to switch off), got ${JSON.stringify(value)}`,
    );
  return [...previous, value as Sabotage];
};

/** `loopguard eval`: the offline scorecard, the attack corpora or live pass@k. */
export function register(program: Command, { out, colors, exit }: CliShared): void {
  program
    .command("eval")
    .description(
      "score the defences: offline scenarios (default), the attack corpora (--corpus) or live Claude (--live)",
    )
    .option("--json", "print the report as JSON")
    .option(
      "--security",
      "the security/utility table: attacker goals x carriers x value forms x defence configurations, always-obeying model",
    )
    .option("--only <name>", "run only this scenario (repeatable)", collect)
    .option("--live", "run the live scenarios against Claude (needs ANTHROPIC_API_KEY)")
    .option("--k <n>", "with --live: runs per scenario, for pass@k", positiveInt("--k"))
    .addOption(
      new Option(
        "--corpus [path]",
        "run the attack corpus through the support desk: the repo's own corpus, or a JSONL file or folder (or LOOPGUARD_CORPUS)",
      ),
    )
    .option(
      "--sabotage <defence>",
      "switch a defence off to see what it catches (repeatable)",
      sabotageOf,
    )
    .addHelpText("after", `\nDefences --sabotage takes: ${sabotageNames.join(", ")}`)
    .action(
      async (options: {
        json?: boolean;
        only?: string[];
        live?: boolean;
        k?: number;
        corpus?: string | true;
        security?: boolean;
        sabotage?: Sabotage[];
      }) => {
        const sabotage = options.sabotage ?? [];
        if (sabotage.length > 0 && options.live)
          throw new UsageError(
            "--sabotage is for offline runs; live runs use the production defences",
          );
        if (options.k !== undefined && !options.live)
          throw new UsageError(
            "--k is for --live runs (pass@k); offline scenarios are deterministic",
          );
        if (options.live) {
          const { liveEval } = await import("../live-eval.js");
          exit(
            await liveEval({
              k: options.k ?? 1,
              json: Boolean(options.json),
              only: options.only ?? [],
              out,
              colors,
            }),
          );
          return;
        }
        if (options.security) {
          const { formatSecurityTable, runSecurityTable } = await import("@loopguard/evals");
          const rows = await runSecurityTable();
          out(options.json ? JSON.stringify(rows, null, 2) : formatSecurityTable(rows));
          // Everything on must stop every attack.
          exit(rows.find((row) => row.config === "everything")?.harmful === 0 ? 0 : 1);
          return;
        }
        if (options.corpus !== undefined) {
          const { corpusEval } = await import("../corpus-eval.js");
          exit(
            await corpusEval({
              json: Boolean(options.json),
              out,
              colors,
              sabotage,
              ...(typeof options.corpus === "string" ? { corpus: options.corpus } : {}),
            }),
          );
          return;
        }
        const card = await runScenarios(scenarios, {
          ...(options.only ? { only: options.only } : {}),
          ...(sabotage.length > 0 ? { sabotage } : {}),
          renderTrace: (spans: Span[], meta: { runId: string }) =>
            traceViewer.renderTraceHtml(spans, meta),
        });
        out(options.json ? JSON.stringify(card, null, 2) : formatScorecard(card, colors));
        exit(card.ok ? 0 : 1);
      },
    );
}
