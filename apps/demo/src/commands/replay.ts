import { jsonlEventStore, postgresEventStore } from "@loopguard/checkpoint";
import type { EventStore } from "@loopguard/core";
import { type ReplayReport, replayRuns } from "@loopguard/policy";
import { loadPolicyFile } from "@loopguard/policy/node";
import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";
import { withDatabase } from "../postgres-connection.js";
import { UsageError } from "../usage-error.js";

/** The final line of a replay: the counts a deploy check reads. */
export function replaySummaryLine(report: ReplayReport): string {
  return `${report.calls} calls re-judged: ${report.allowedToDenied} allowed → denied, ${report.deniedToAllowed} denied → allowed, ${report.toAsk} → ask, ${report.unchanged} unchanged`;
}

/**
 * `loopguard replay --policy candidate.json`: re-judges every recorded call of past runs under a
 * candidate policy and prints the decisions that would change.
 */
export function register(program: Command, { out, colors, exit }: CliShared): void {
  withDir(
    program
      .command("replay")
      .description(
        "re-judge every recorded call of past runs under a candidate policy and print the decisions that would change",
      )
      .requiredOption("--policy <file>", "the candidate policy (a version 1 JSON document)")
      .option("--database-url <url>", "read runs from PostgreSQL instead of --dir")
      .option("--schema <name>", "the PostgreSQL schema of the runs", "loopguard")
      .option("--since <date>", "only runs updated at or after this date (ISO, e.g. 2026-12-01)")
      .option("--json", "print the report as JSON (for CI)")
      .option(
        "--max-denied <percent>",
        "exit 1 when more than this share of the re-judged calls would go from allowed to denied (a deploy check)",
      ),
  ).action(
    async (options: {
      policy: string;
      dir: string;
      databaseUrl?: string;
      schema: string;
      since?: string;
      json?: boolean;
      maxDenied?: string;
    }) => {
      let maxDenied: number | undefined;
      if (options.maxDenied !== undefined) {
        maxDenied = Number(options.maxDenied.replace(/%$/, ""));
        if (
          options.maxDenied.trim() === "" ||
          !Number.isFinite(maxDenied) ||
          maxDenied < 0 ||
          maxDenied > 100
        )
          throw new UsageError(
            `--max-denied must be a percentage from 0 to 100, such as 1 or 0.5, got ${JSON.stringify(options.maxDenied)}`,
          );
      }
      let since: number | undefined;
      if (options.since !== undefined) {
        since = Date.parse(options.since);
        if (!Number.isFinite(since))
          throw new UsageError(
            `--since must be a date such as 2026-12-01 or 2026-12-01T09:00:00Z, got ${JSON.stringify(options.since)}`,
          );
      }
      // Loaded first so a candidate that does not load fails with the loader's path and reason.
      const candidate = await loadPolicyFile(options.policy);
      const source = options.databaseUrl ? `PostgreSQL ${options.schema}` : pathsOf(options).runs;
      const store: EventStore = options.databaseUrl
        ? postgresEventStore({ connectionString: options.databaseUrl, schema: options.schema })
        : jsonlEventStore({ dir: pathsOf(options).runs });
      const skipped: string[] = [];
      let report: ReplayReport;
      try {
        const work = () =>
          replayRuns({
            policy: candidate.document,
            store,
            ...(since !== undefined ? { since } : {}),
            onSkip: (runId, error) => skipped.push(`${runId}: ${error}`),
          });
        report = options.databaseUrl ? await withDatabase(options.databaseUrl, work) : await work();
      } finally {
        await store.close?.();
      }
      const deniedShare = report.calls === 0 ? 0 : (report.allowedToDenied / report.calls) * 100;
      const overLimit =
        maxDenied !== undefined && deniedShare > maxDenied ? deniedShare : undefined;
      if (options.json) {
        out(JSON.stringify({ ...report, summary: replaySummaryLine(report) }, null, 2));
      } else {
        for (const line of skipped)
          out(colors.yellow(`skipped run ${line} (its log cannot be read)`));
        if (report.changes.length > 0) {
          const rows = report.changes.map((change) => [
            new Date(change.at).toISOString(),
            change.runId,
            change.tool,
            `${change.before.outcome}${change.before.asked ? " (asked)" : ""}${change.before.reason && change.before.outcome === "deny" ? ` ${change.before.reason}` : ""}`,
            `${change.after.outcome}${change.after.reason ? ` ${change.after.reason}` : ""}`,
          ]);
          const header = ["when", "run", "tool", "before", "after"];
          const widths = header.map((title, column) =>
            Math.max(title.length, ...rows.map((row) => row[column]!.length)),
          );
          out(colors.bold(header.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")));
          for (const row of rows)
            out(row.map((cell, column) => cell.padEnd(widths[column]!)).join("  "));
        } else {
          out(colors.dim(`no decision changes in ${report.runs} runs from ${source}`));
        }
        if (report.unjudgeable > 0)
          out(
            colors.dim(
              `${report.unjudgeable} refused calls could not be re-judged: their arguments are not in the log`,
            ),
          );
        if (overLimit !== undefined)
          out(
            colors.red(
              `${overLimit.toFixed(2)}% of the calls would be denied, over --max-denied ${maxDenied}%`,
            ),
          );
        // The counts stay the last line: a script reads it.
        out(replaySummaryLine(report));
      }
      if (overLimit !== undefined) exit(1);
    },
  );
}
