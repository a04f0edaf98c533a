import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";
import { demoAgent } from "../demo-agent.js";
import { invocation } from "../invocation.js";
import { parentRunIdOf, runForest } from "../run-forest.js";

/** `loopguard runs`: lists the runs in the runs directory. */
export function register(program: Command, { out, colors }: CliShared): void {
  withDir(
    program
      .command("runs")
      .description(
        "list the runs in the runs directory, newest first, each delegated run under the run that started it",
      ),
  ).action(async (options: { dir: string }) => {
    const paths = pathsOf(options);
    const demo = await demoAgent({ paths });
    const runs = await demo.store.list();
    if (runs.length === 0) {
      out(`no runs in ${paths.runs}; start one with: ${invocation()} demo`);
      return;
    }
    // Runs under a shadow policy show how many calls it would have decided differently.
    const shadowed = runs.some((run) => (run.shadowDifferences ?? 0) > 0);
    // A delegating run's children are drawn under it; its cost already holds theirs (core
    // charges a child's spend to its parent when the child ends).
    const forest = runForest(runs);
    const trees = forest.some((row) => row.descendants > 0);
    const rows = forest.map((row) => [
      `${row.prefix}${row.run.runId}${row.orphan ? ` (child of ${parentRunIdOf(row.run)})` : ""}`,
      row.run.status,
      String(row.run.steps),
      `$${row.run.costUsd.toFixed(4)}`,
      new Date(row.run.updatedAt).toISOString(),
      ...(shadowed ? [String(row.run.shadowDifferences ?? 0)] : []),
    ]);
    const header = [
      "id",
      "status",
      "steps",
      trees ? "cost (with children)" : "cost",
      "last update",
      ...(shadowed ? ["shadow differences"] : []),
    ];
    const widths = header.map((title, column) =>
      Math.max(title.length, ...rows.map((row) => row[column]!.length)),
    );
    out(colors.bold(header.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")));
    for (const row of rows) out(row.map((cell, column) => cell.padEnd(widths[column]!)).join("  "));
  });
}
