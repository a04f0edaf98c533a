import type { RunSummary } from "@loopguard/core";

/** One row of the run list drawn as a tree. */
export interface ForestRow {
  run: RunSummary;
  /** 0 for a run with no parent in the list. */
  level: number;
  /** What goes before the id: `├─ `, `└─ ` and `│  ` for the levels above. */
  prefix: string;
  /** Runs below it in the list. */
  descendants: number;
  /** A child run whose parent is not in the list (another page, or its log is gone). */
  orphan: boolean;
}

/** The parent a summary names (stores fill it from the child's `run-start`). */
export function parentRunIdOf(run: RunSummary): string | undefined {
  const parent = (run as RunSummary & { parentRunId?: unknown }).parentRunId;
  return typeof parent === "string" && parent !== "" && parent !== run.runId ? parent : undefined;
}

/**
 * Orders runs as a forest: each child right under its parent (children oldest first, as they
 * were started), roots in the order given. A run whose parent is not in the list is a root
 * marked `orphan`; a cycle in malformed summaries is broken where it is met, so every run
 * appears exactly once.
 *
 * @example
 * for (const row of runForest(await store.list())) console.log(row.prefix + row.run.runId);
 */
export function runForest(runs: readonly RunSummary[]): ForestRow[] {
  const byId = new Map(runs.map((run) => [run.runId, run]));
  const children = new Map<string, RunSummary[]>();
  for (const run of runs) {
    const parent = parentRunIdOf(run);
    if (!parent || !byId.has(parent)) continue;
    const list = children.get(parent) ?? [];
    list.push(run);
    children.set(parent, list);
  }
  for (const list of children.values())
    list.sort((a, b) => a.createdAt - b.createdAt || (a.runId < b.runId ? -1 : 1));
  const rows: ForestRow[] = [];
  const placed = new Set<string>();
  const visit = (run: RunSummary, level: number, lead: string, last: boolean): ForestRow => {
    placed.add(run.runId);
    const parent = parentRunIdOf(run);
    const row: ForestRow = {
      run,
      level,
      prefix: level === 0 ? "" : `${lead}${last ? "└─ " : "├─ "}`,
      descendants: 0,
      orphan: level === 0 && parent !== undefined && !byId.has(parent),
    };
    rows.push(row);
    const below = (children.get(run.runId) ?? []).filter((child) => !placed.has(child.runId));
    below.forEach((child, index) => {
      const sub = visit(
        child,
        level + 1,
        level === 0 ? "" : `${lead}${last ? "   " : "│  "}`,
        index === below.length - 1,
      );
      row.descendants += 1 + sub.descendants;
    });
    return row;
  };
  for (const run of runs) {
    if (placed.has(run.runId)) continue;
    const parent = parentRunIdOf(run);
    if (parent && byId.has(parent)) continue;
    visit(run, 0, "", true);
  }
  // A cycle leaves its runs unplaced: show them as roots.
  for (const run of runs) if (!placed.has(run.runId)) visit(run, 0, "", true);
  return rows;
}
