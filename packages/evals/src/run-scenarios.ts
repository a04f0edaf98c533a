import { InvalidArgumentError } from "@loopguard/core";
import { checkSabotage, type LoadedPackages, loadPackages, type Sabotage } from "./defences.js";
import { findLeaks, type TraceRenderer } from "./observed-surfaces.js";
import {
  type Check,
  createScenarioContext,
  type Scenario,
  type ScenarioCategory,
} from "./scenario.js";

/** How a scenario ended. */
export type ScenarioStatus = "PASS" | "FAIL" | "PENDING";

/** The result of one scenario. */
export interface ScenarioResult {
  name: string;
  category: ScenarioCategory;
  title: string;
  status: ScenarioStatus;
  checks: Check[];
  /** Why it is pending. */
  pending?: string;
  durationMs: number;
}

/** Options of `runScenarios`. */
export interface RunScenariosOptions {
  /** Run only these scenarios (by name). */
  only?: readonly string[];
  /** Switch defences off to prove the scorecard fails without them. */
  sabotage?: readonly Sabotage[];
  /** Renders a run's trace as HTML for the leak scan (the CLI passes its viewer). */
  renderTrace?: TraceRenderer;
  /** The packages to build defences from (default: `loadPackages()`, the statically imported ones). */
  packages?: LoadedPackages;
}

/** The scorecard: every scenario's result and the totals. */
export interface Scorecard {
  results: ScenarioResult[];
  passed: number;
  failed: number;
  pending: number;
  checks: { passed: number; total: number };
  durationMs: number;
  /** `true` when nothing failed (pending scenarios do not fail the card, and are listed). */
  ok: boolean;
}

/**
 * Runs scenarios one after another and scores them. A scenario passes when every check holds,
 * including the global `no_pii_in_observability` check; one that throws fails with the error
 * as a check.
 *
 * @example
 * const card = await runScenarios(scenarios, { only: ["refund_happy_path"] });
 * console.log(formatScorecard(card));
 * process.exitCode = card.ok ? 0 : 1;
 */
export async function runScenarios(
  scenarios: readonly Scenario[],
  options: RunScenariosOptions = {},
): Promise<Scorecard> {
  if (!Array.isArray(scenarios))
    throw new InvalidArgumentError(
      "[evals] runScenarios(scenarios): scenarios must be an array of scenario(...) values",
    );
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[evals] runScenarios(scenarios, options): options must be an object",
    );
  for (const [index, item] of scenarios.entries()) {
    if (item === null || typeof item !== "object" || typeof item.run !== "function")
      throw new InvalidArgumentError(
        `[evals] runScenarios(scenarios): scenarios[${index}] is not a scenario; make it with scenario(meta, fn)`,
      );
  }
  if (
    options.only !== undefined &&
    (!Array.isArray(options.only) || options.only.some((name) => typeof name !== "string"))
  )
    throw new InvalidArgumentError(
      `[evals] runScenarios: only must be an array of scenario names such as ["refund_happy_path"], got ${JSON.stringify(options.only)}`,
    );
  checkSabotage(options.sabotage, "runScenarios");
  const names = new Set(scenarios.map((item) => item.name));
  for (const name of options.only ?? []) {
    if (!names.has(name))
      throw new InvalidArgumentError(
        `[evals] no scenario is named "${name}"; known: ${[...names].join(", ")}`,
      );
  }
  const packages = options.packages ?? (await loadPackages());
  const started = performance.now();
  const results: ScenarioResult[] = [];
  for (const item of scenarios) {
    if (options.only && options.only.length > 0 && !options.only.includes(item.name)) continue;
    results.push(await runOne(item, packages, options));
  }
  const passed = results.filter((result) => result.status === "PASS").length;
  const failed = results.filter((result) => result.status === "FAIL").length;
  const checks = results.flatMap((result) => result.checks);
  return {
    results,
    passed,
    failed,
    pending: results.length - passed - failed,
    checks: { passed: checks.filter((check) => check.ok).length, total: checks.length },
    durationMs: Math.round(performance.now() - started),
    ok: failed === 0,
  };
}

async function runOne(
  item: Scenario,
  packages: LoadedPackages,
  options: RunScenariosOptions,
): Promise<ScenarioResult> {
  const base = { name: item.name, category: item.category, title: item.title };
  const started = performance.now();
  const { context, checks, surfaces } = createScenarioContext({
    packages,
    sabotage: options.sabotage ?? [],
    live: false,
  });
  try {
    await item.run(context);
  } catch (error) {
    checks.push({
      name: "ran_without_throwing",
      ok: false,
      detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
  }
  try {
    const leaks = await findLeaks(surfaces, options.renderTrace);
    checks.push({
      name: "no_pii_in_observability",
      ok: leaks.length === 0,
      ...(leaks.length > 0
        ? {
            detail: leaks
              .slice(0, 3)
              .map((leak) => `${leak.value.slice(0, 6)}… in ${leak.surface}`)
              .join("; "),
          }
        : {}),
    });
  } catch (error) {
    checks.push({
      name: "no_pii_in_observability",
      ok: false,
      detail: `the scan failed: ${error instanceof Error ? error.message : String(error)}`,
    });
  }
  const ok = checks.length > 1 && checks.every((check) => check.ok);
  return {
    ...base,
    status: ok ? "PASS" : "FAIL",
    checks,
    durationMs: Math.round(performance.now() - started),
  };
}
