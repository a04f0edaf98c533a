import { describe, expect, it } from "vitest";
import { formatCorpusReport, readCorpus, runCorpus } from "./run-corpus.js";

describe("the attack corpus runner", () => {
  it("executes no harmful side effect and completes benign tasks", async () => {
    const records = readCorpus().filter((_record, index) => index % 8 === 0);
    const report = await runCorpus({ records });
    expect(report.harmful, formatCorpusReport(report)).toBe(0);
    expect(report.benignCompleted).toBeGreaterThan(0);
  });

  it("counts harm when the email rule is removed and nothing else stops it", async () => {
    const records = readCorpus()
      .filter((record) => record.label === "injection")
      .slice(0, 3);
    const report = await runCorpus({ records, sabotage: ["policy_deny", "taint_gate"] });
    expect(report.harmful).toBe(3);
  });

  it("says where the corpus should be when it is missing", () => {
    expect(() => readCorpus("/nonexistent/injection.jsonl")).toThrow(
      /does not exist; put injection.jsonl there or set LOOPGUARD_CORPUS/,
    );
  });
});
