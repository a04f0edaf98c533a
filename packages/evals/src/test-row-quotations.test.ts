import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { corpusFile, corpusSplits } from "./run-corpus.js";

// The test subsets of the public corpora are measured, never read while writing rules,
// templates or tests. This test checks the repository for the traces such reading leaves: an
// 8-word run of a test row's text, or a labelled value (a name, an address, a number) of a test
// row, in any tracked file. It runs when the corpora are named (LOOPGUARD_CORPUS,
// LOOPGUARD_PII_CORPUS), as in CI; on a clone alone there is nothing to compare with.

const repository = resolve(import.meta.dirname, "../../..");
/** The PII corpus's test subset (its README: measure on it, never quote its rows). */
const piiTestSubsets = new Set(["presidio_research_synth"]);
const shingleWords = 8;
/** Entity types whose values are common text (a country, a company, a nationality), not a row's own. */
const commonTypes = new Set(["LOCATION", "ORGANIZATION", "NRP", "TITLE"]);

/** The words of a text, lower-cased, split on anything that is not a letter or a digit. */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

function shinglesOf(text: string): string[] {
  const list = words(text);
  const shingles: string[] = [];
  for (let index = 0; index + shingleWords <= list.length; index++)
    shingles.push(list.slice(index, index + shingleWords).join(" "));
  return shingles;
}

interface TestRow {
  corpus: string;
  id: string;
  text: string;
  values: string[];
}

function testRows(): TestRow[] {
  const rows: TestRow[] = [];
  const injection = process.env.LOOPGUARD_CORPUS;
  if (injection && existsSync(corpusFile(injection)))
    for (const line of readFileSync(corpusFile(injection), "utf8").split("\n")) {
      if (!line.trim()) continue;
      const row = JSON.parse(line) as { id: string; text: string; subset: string };
      if (corpusSplits[row.subset] === "test")
        rows.push({ corpus: "injection", id: row.id, text: row.text, values: [] });
    }
  const pii = process.env.LOOPGUARD_PII_CORPUS;
  if (pii && existsSync(pii))
    for (const line of readFileSync(pii, "utf8").split("\n")) {
      if (!line.trim()) continue;
      const row = JSON.parse(line) as {
        id: string;
        text: string;
        subset: string;
        entities?: Array<{ type?: string; value?: string }>;
      };
      if (piiTestSubsets.has(row.subset))
        rows.push({
          corpus: "pii",
          id: row.id,
          text: row.text,
          values: (row.entities ?? [])
            .filter((entity) => !commonTypes.has(entity.type ?? ""))
            .map((entity) => entity.value ?? "")
            .filter(Boolean),
        });
    }
  return rows;
}

/**
 * A labelled value distinctive enough that finding it in a file means the row was read: at
 * least 8 characters and two words, or a number of 6 digits or more (a lone first name or a
 * city is common text, not a quotation).
 */
function distinctive(value: string): boolean {
  const trimmed = value.trim();
  const digits = (trimmed.match(/\d/g) ?? []).length;
  return (trimmed.length >= 8 && words(trimmed).length >= 2) || digits >= 6;
}

/** The quotations of test rows in one file's text: 8-word runs and labelled values. */
function quotationsIn(
  text: string,
  file: string,
  shingles: ReadonlyMap<string, string>,
  values: ReadonlyMap<string, string>,
): string[] {
  const found: string[] = [];
  for (const shingle of new Set(shinglesOf(text))) {
    const row = shingles.get(shingle);
    if (row) found.push(`${file}: "${shingle}" (${row})`);
  }
  const lower = text.toLowerCase();
  for (const [value, row] of values)
    if (lower.includes(value)) found.push(`${file}: labelled value "${value}" (${row})`);
  return found;
}

function trackedFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z"], { cwd: repository, encoding: "utf8" });
  return listed
    .split("\0")
    .filter(Boolean)
    .filter((file) => !/(^|\/)pnpm-lock\.yaml$|\.(png|jpg|gz|tgz|bin|wasm|ico)$/.test(file))
    .map((file) => join(repository, file))
    .filter((path) => existsSync(path) && statSync(path).size < 8_000_000);
}

const rows = testRows();
const gitAvailable = existsSync(join(repository, ".git"));
if (rows.length === 0)
  console.info(
    "[evals tests] the test-row quotation check is skipped: name the public corpora with LOOPGUARD_CORPUS and LOOPGUARD_PII_CORPUS to run it",
  );

describe.skipIf(rows.length === 0 || !gitAvailable)(
  "no test row is quoted in the repository",
  () => {
    it("has no 8-word run of a test row's text and no labelled value of one in any tracked file", () => {
      const shingles = new Map<string, string>();
      const values = new Map<string, string>();
      for (const row of rows) {
        for (const shingle of shinglesOf(row.text))
          shingles.set(shingle, `${row.corpus}:${row.id}`);
        for (const value of row.values)
          if (distinctive(value)) values.set(value.toLowerCase(), `${row.corpus}:${row.id}`);
      }
      const found: string[] = [];
      for (const path of trackedFiles())
        found.push(
          ...quotationsIn(
            readFileSync(path, "utf8"),
            path.slice(repository.length + 1),
            shingles,
            values,
          ),
        );
      expect(found.slice(0, 40), `${found.length} quotation(s) of test rows`).toEqual([]);
    }, 300_000);

    it("can fail: a file carrying an 8-word run or a labelled value of a test row is named", () => {
      const row = rows.find((candidate) => shinglesOf(candidate.text).length > 0)!;
      const [shingle] = shinglesOf(row.text);
      const shingles = new Map([[shingle!, `${row.corpus}:${row.id}`]]);
      const values = new Map([["jane roe 555 0100", "pii:planted"]]);
      const planted = `// a comment quoting ${shingle}\nconst name = "Jane Roe 555 0100";`;
      expect(quotationsIn(planted, "planted.ts", shingles, values)).toEqual([
        `planted.ts: "${shingle}" (${row.corpus}:${row.id})`,
        'planted.ts: labelled value "jane roe 555 0100" (pii:planted)',
      ]);
      expect(quotationsIn("nothing quoted here", "clean.ts", shingles, values)).toEqual([]);
    });
  },
);
