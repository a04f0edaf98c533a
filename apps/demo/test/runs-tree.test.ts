import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childRunId,
  delegationTree,
  grandchildRunId,
  rootRunId,
} from "../src/trace/__fixtures__/delegation-tree.js";
import { built, run } from "./cli-helpers.js";

// `loopguard runs` and `loopguard trace` on a real delegation tree (asTool) in a runs directory.
const dir = mkdtempSync(join(tmpdir(), "loopguard-runs-tree-"));
const runs = join(dir, "runs");

beforeAll(async () => {
  const store = jsonlEventStore({ dir: runs });
  await delegationTree(store);
  await store.close?.();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!built)("loopguard runs and trace on a delegation tree", () => {
  it("runs draws each child under its parent, with status and the spend that includes the children", () => {
    const result = run(["runs", "--dir", runs]);
    expect(result.status, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^id\s+status\s+steps\s+cost \(with children\)\s+last update/);
    expect(lines.slice(1).map((line) => /^.*?run_\S+/.exec(line)?.[0])).toEqual([
      rootRunId,
      `└─ ${childRunId}`,
      `   └─ ${grandchildRunId}`,
    ]);
    const cost = (line: string) => Number(/\$(\d+\.\d+)/.exec(line)![1]);
    // A parent's cost holds its children's: each row costs more than the row below it.
    expect(cost(lines[1]!)).toBeGreaterThan(cost(lines[2]!));
    expect(cost(lines[2]!)).toBeGreaterThan(cost(lines[3]!));
    for (const line of lines.slice(1)) expect(line).toMatch(/\bcompleted\b/);
  });

  it("trace writes the tree in one page and each child's page beside it, linked", () => {
    const out = join(dir, "traces", rootRunId);
    const result = run(["trace", rootRunId, "--dir", runs, "--out", out]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("the 2 runs it delegated to");
    const html = readFileSync(join(out, "trace.html"), "utf8");
    for (const id of [childRunId, grandchildRunId]) {
      expect(html).toContain(`../${id}/trace.html`);
      expect(existsSync(join(dir, "traces", id, "trace.html")), id).toBe(true);
    }
    const child = run([
      "trace",
      childRunId,
      "--dir",
      runs,
      "--out",
      join(dir, "traces", childRunId),
    ]);
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout).toContain(`trace that run with: loopguard trace ${rootRunId}`);
  });
});
