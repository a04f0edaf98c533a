import { treeBudgetHooks } from "./budget-tree.js";
import { type LoopContext, loopContext } from "./loop-context.js";
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
    gates: [...child.gates, ...parent.gates],
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
    // The tree's depth limit and runner are the root's.
    maxDepth: tree.maxDepth,
    childRunner: tree.childRunner,
  });
  const built: LoopContext = {
    ...loop,
    telemetry: parent.telemetry,
    runBudgets: treeBudgetHooks(loop.runBudgets),
  };
  byChild.set(child, built);
  return built;
}
