import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  bundledCorpusPath,
  defaultCorpusPath,
  externalCorpusPath,
  formatCorpusReport,
  readCorpus,
  runCorpus,
} from "./run-corpus.js";

const scratch = mkdtempSync(join(tmpdir(), "lg-corpus-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const packageRoot = resolve(import.meta.dirname, "..");

describe("the attack corpus runner on the corpus the repository carries", () => {
  it("bundles its corpus inside the package, and reads outside it only when told", () => {
    const bundled = bundledCorpusPath();
    expect(relative(packageRoot, bundled)).toBe(join("corpora", "injection.jsonl"));
    const previous = process.env.LOOPGUARD_CORPUS;
    try {
      delete process.env.LOOPGUARD_CORPUS;
      expect(externalCorpusPath()).toBeUndefined();
      expect(defaultCorpusPath()).toBe(bundled);
      process.env.LOOPGUARD_CORPUS = scratch;
      // A folder means the injection.jsonl inside it.
      expect(defaultCorpusPath()).toBe(join(scratch, "injection.jsonl"));
    } finally {
      if (previous === undefined) delete process.env.LOOPGUARD_CORPUS;
      else process.env.LOOPGUARD_CORPUS = previous;
    }
    const records = readCorpus(bundled);
    expect(records.filter((record) => record.label === "injection").length).toBeGreaterThan(20);
    expect(records.filter((record) => record.label === "benign").length).toBeGreaterThan(15);
    expect(new Set(records.map((record) => record.id)).size).toBe(records.length);
  });

  it("executes no harmful side effect and completes every benign task", async () => {
    const report = await runCorpus({ path: bundledCorpusPath() });
    expect(report.harmful, formatCorpusReport(report)).toBe(0);
    expect(report.documents).toBe(readCorpus(bundledCorpusPath()).length);
    expect(report.benignCompleted).toBe(report.documents);
  });

  it("counts harm when the email rule and the taint gate are removed and nothing else stops it", async () => {
    const records = readCorpus(bundledCorpusPath())
      .filter((record) => record.label === "injection")
      .slice(0, 3);
    const report = await runCorpus({ records, sabotage: ["policy_deny", "taint_gate"] });
    expect(report.harmful).toBe(3);
  });

  it("says where the corpus should be when it is missing, and names the line that is not a record", () => {
    expect(() => readCorpus("/nonexistent/injection.jsonl")).toThrow(
      /does not exist; give a JSONL file .* set LOOPGUARD_CORPUS/,
    );
    const file = join(scratch, "bad.jsonl");
    writeFileSync(file, '{"id":"a","text":"x","label":"benign","subset":"s"}\n{"text":1}\n');
    expect(() => readCorpus(file)).toThrow(/bad\.jsonl:2 is not a corpus record/);
  });
});

// The public corpora are an external benchmark: read only
// when LOOPGUARD_CORPUS names them, so a clone alone runs every other test.
const external = externalCorpusPath();
if (!external)
  console.info(
    "[evals tests] the external attack benchmark is skipped: set LOOPGUARD_CORPUS to a corpus file or folder (the public labelled corpora) to run it",
  );
describe.skipIf(!external)("the attack corpus runner on the external benchmark", () => {
  it("executes no harmful side effect on a sample of it", async () => {
    const records = readCorpus(external).filter((_record, index) => index % 8 === 0);
    const report = await runCorpus({ records });
    expect(report.harmful, formatCorpusReport(report)).toBe(0);
    expect(report.benignCompleted).toBeGreaterThan(0);
  });
});
