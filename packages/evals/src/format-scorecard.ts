import { InvalidArgumentError } from "@loopguard/core";
import type { Scorecard } from "./run-scenarios.js";
import { textTable } from "./text-table.js";

/** Colours for the table; identity functions by default. */
export interface ScorecardColors {
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

const plain: ScorecardColors = {
  green: (text) => text,
  red: (text) => text,
  yellow: (text) => text,
  dim: (text) => text,
  bold: (text) => text,
};

/**
 * Formats a scorecard as a table: number, scenario, category, checks passed, PASS/FAIL/PENDING,
 * then the failed checks and pending reasons, then the total.
 *
 * @example
 * console.log(formatScorecard(await runScenarios(scenarios)));
 */
export function formatScorecard(card: Scorecard, colors: ScorecardColors = plain): string {
  if (card === null || typeof card !== "object" || !Array.isArray(card.results))
    throw new InvalidArgumentError(
      "[evals] formatScorecard(card): card must be the scorecard runScenarios() resolves to",
    );
  const rows = card.results.map((result, index) => [
    String(index + 1),
    result.name,
    result.category,
    result.status === "PENDING"
      ? "-"
      : `${result.checks.filter((check) => check.ok).length}/${result.checks.length}`,
    result.status,
  ]);
  const header = ["#", "scenario", "category", "checks", "result"];
  const { line, rule } = textTable(header, rows);
  const paint = (status: string, text: string) =>
    status === "PASS"
      ? colors.green(text)
      : status === "FAIL"
        ? colors.red(text)
        : colors.yellow(text);
  const out = [colors.bold(line(header)), colors.dim(rule)];
  for (const [index, row] of rows.entries()) {
    const result = card.results[index]!;
    out.push(paint(result.status, line(row)));
    for (const check of result.checks.filter((item) => !item.ok))
      out.push(colors.red(`     ✗ ${check.name}${check.detail ? `: ${check.detail}` : ""}`));
    if (result.pending) out.push(colors.dim(`     … ${result.pending}`));
  }
  out.push("");
  const summary = `${card.passed} passed, ${card.failed} failed, ${card.pending} pending of ${card.results.length} scenarios; ${card.checks.passed}/${card.checks.total} checks; ${card.durationMs} ms`;
  out.push(card.failed > 0 ? colors.red(summary) : colors.green(summary));
  return out.join("\n");
}
