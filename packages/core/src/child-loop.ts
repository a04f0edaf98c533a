import { ancestorGate } from "./ancestor-gate.js";
import { treeBudgetHooks } from "./budget-tree.js";
import type { RunBudget } from "./contracts/run-budget.js";
import { type LoopContext, loopContext } from "./loop-context.js";
import { type ModelPrice, priceOf } from "./pricing.js";
import { treeScanner } from "./tree-scanner.js";

/** Child loops already made, per parent loop and child agent. */
const made = new WeakMap<LoopContext, WeakMap<LoopContext, LoopContext>>();

/**
 * The loop a child agent runs in when a parent calls it through `asTool`: the child's model,
 * tools, system prompt, gates, scanner and envelope, under the tree's rules: the parent's log
 * (one store), vault (tokens stay tokens), traces and approvals; the parent's gates (its
 * ancestors' included) judging every call after the child's own within each step; the
 * reasons that halt of both; and a budget hook that keeps each step within every ancestor's
 * budget. Made once per parent and child agent.
 */
export function childLoopOf(parent: LoopContext, child: LoopContext): LoopContext {
  let byChild = made.get(parent);
  if (!byChild) {
    byChild = new WeakMap();
    made.set(parent, byChild);
  }
  const known = byChild.get(child);
  if (known) return known;
  const base = child.config;
  const tree = parent.config;
  const loop = loopContext({
    ...base,
    store: parent.store,
    vault: tree.vault ?? base.vault,
    // The parent's gates judge the child's calls with the parent's view of the tree.
    gates: [...child.gates, ...parent.gates.map(ancestorGate)],
    // What the child reads is scanned as what the parent reads (and by the child's own scanner
    // too); the child's envelope wraps it when it has one, else the tree's.
    scanner: treeScanner(base.scanner, tree.scanner),
    envelope: base.envelope ?? tree.envelope,
    haltOn: [...new Set([...base.haltOn, ...tree.haltOn])],
    approver: tree.approver,
    approval: tree.approval,
    redact: tree.redact,
    // Spans and events go where the parent's go (its telemetry, below).
    exporters: [],
    onEvent: tree.onEvent,
    onError: tree.onError,
    now: tree.now ?? base.now,
    // The tree's run budgets (a tenant's daily spend) bill the child's steps too; the child is
    // not a new run of the tree, so their `start` is not asked for it.
    budgets: treeRunBudgets(base.budgets, tree.budgets),
    // The tree's depth limit and runner are the root's.
    maxDepth: tree.maxDepth,
    childRunner: tree.childRunner,
  });
  const built: LoopContext = {
    ...loop,
    // The tree bills a child at the dearer of its own price and the tree's for its model, so a
    // child given cheaper `prices` cannot stretch an ancestor's budget.
    price: dearerPrice(loop.price, treePriceOf(base.model.model, tree.prices)),
    telemetry: parent.telemetry,
    runBudgets: treeBudgetHooks(loop.runBudgets),
  };
  byChild.set(child, built);
  return built;
}

/** The tree's price of a model, when the tree knows it (construction refuses one it does not). */
function treePriceOf(
  model: string,
  prices: Readonly<Record<string, ModelPrice>> | undefined,
): ModelPrice | undefined {
  try {
    return priceOf(model, prices);
  } catch {
    return undefined;
  }
}

/** Per rate, the larger of two prices; a long-prompt band applies from the lower threshold. */
export function dearerPrice(own: ModelPrice, tree: ModelPrice | undefined): ModelPrice {
  if (!tree || tree === own) return own;
  const rates = (a: Omit<ModelPrice, "longPrompt">, b: Omit<ModelPrice, "longPrompt">) => ({
    inputPerMTok: Math.max(a.inputPerMTok, b.inputPerMTok),
    outputPerMTok: Math.max(a.outputPerMTok, b.outputPerMTok),
    cacheWrite5mPerMTok: Math.max(a.cacheWrite5mPerMTok, b.cacheWrite5mPerMTok),
    cacheWrite1hPerMTok: Math.max(a.cacheWrite1hPerMTok, b.cacheWrite1hPerMTok),
    cacheReadPerMTok: Math.max(a.cacheReadPerMTok, b.cacheReadPerMTok),
  });
  const base = rates(own, tree);
  const bands = [own.longPrompt, tree.longPrompt].filter((band) => band !== undefined);
  if (bands.length === 0) return base;
  const band = bands.reduce((a, b) => ({
    ...rates(a, b),
    thresholdTokens: Math.min(a.thresholdTokens, b.thresholdTokens),
  }));
  return { ...base, longPrompt: { ...rates(band, base), thresholdTokens: band.thresholdTokens } };
}

/** Steps only: a run budget of the tree as a child run sees it (its `start` counts top runs). */
const stepsOnly = new WeakMap<RunBudget, RunBudget>();
/** The budget a steps-only wrapper stands for. */
const wrappedBy = new WeakMap<RunBudget, RunBudget>();

const originalOf = (budget: RunBudget): RunBudget => wrappedBy.get(budget) ?? budget;

/**
 * The run budgets a child's steps are reserved and settled against: its own and the tree's
 * (each once, a budget shared by parent and child too), the tree's without `start` (a child is
 * not a new run of the tree's tenant).
 */
function treeRunBudgets(
  own: readonly RunBudget[],
  tree: readonly RunBudget[],
): readonly RunBudget[] {
  const result = [...own];
  const seen = new Set(own.map(originalOf));
  for (const budget of tree) {
    const original = originalOf(budget);
    if (seen.has(original)) continue;
    seen.add(original);
    let wrapped = stepsOnly.get(original);
    if (!wrapped) {
      wrapped = {
        name: original.name,
        reserve: (run, step) => original.reserve(run, step),
        settle: (run, step) => original.settle(run, step),
      };
      stepsOnly.set(original, wrapped);
      wrappedBy.set(wrapped, original);
    }
    result.push(wrapped);
  }
  return result;
}
