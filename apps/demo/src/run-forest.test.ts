import type { RunSummary } from "@loopguard/core";
import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runForest } from "./run-forest.js";

const run = (runId: string, createdAt: number, parentRunId?: string, costUsd = 1): RunSummary =>
  ({
    runId,
    status: "completed",
    steps: 1,
    costUsd,
    events: 3,
    createdAt,
    updatedAt: createdAt,
    ...(parentRunId ? { parentRunId } : {}),
  }) as RunSummary;

describe("runForest", () => {
  it("puts each child under its parent, oldest first, and counts the runs below", () => {
    const rows = runForest([
      run("b", 50),
      run("a.2", 30, "a", 0.5),
      run("a", 10),
      run("a.1", 20, "a", 0.25),
      run("a.1.x", 25, "a.1", 0.125),
    ]);
    expect(rows.map((row) => `${row.prefix}${row.run.runId}`)).toEqual([
      "b",
      "a",
      "├─ a.1",
      "│  └─ a.1.x",
      "└─ a.2",
    ]);
    const a = rows.find((row) => row.run.runId === "a")!;
    expect(a.descendants).toBe(3);
    expect(rows.map((row) => row.level)).toEqual([0, 0, 1, 2, 1]);
  });

  it("shows a child whose parent is not listed as an orphan root, and breaks cycles", () => {
    const rows = runForest([run("c", 1, "gone"), run("x", 2, "y"), run("y", 3, "x")]);
    expect(rows.find((row) => row.run.runId === "c")).toMatchObject({ level: 0, orphan: true });
    expect(rows.map((row) => row.run.runId).sort()).toEqual(["c", "x", "y"]);
  });

  it("lists every run exactly once whatever the parent links", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 30 }), fc.option(fc.integer({ min: 0, max: 30 }))),
          {
            maxLength: 40,
          },
        ),
        (pairs) => {
          const seen = new Set<string>();
          const runs = pairs
            .map(([id, parent], index) =>
              run(`r${id}`, index, parent === null ? undefined : `r${parent}`),
            )
            .filter((item) => !seen.has(item.runId) && seen.add(item.runId));
          const rows = runForest(runs);
          expect(rows.map((row) => row.run.runId).sort()).toEqual(
            runs.map((item) => item.runId).sort(),
          );
          for (const row of rows) if (row.level > 0) expect(row.prefix).toMatch(/[└├]─ $/);
        },
      ),
    );
  });
});
