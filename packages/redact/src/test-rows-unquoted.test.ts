import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { expect, it } from "vitest";
import {
  isPublicTestRow,
  loadPiiRows,
  PUBLIC_CORPUS_ENV,
  publicCorpusPath,
} from "../bench/pii-data.mjs";

// The public corpus's test subset is measured, never quoted: no file of this package (source,
// tests, benches, the generated corpus, the README) may hold an 8-word run of a test row's text
// or one of its labelled values. Runs only when LOOPGUARD_PII_CORPUS names the corpus; a clone
// without it has nothing to compare with.

const PACKAGE_ROOT = new URL("..", import.meta.url).pathname;
const SKIP_DIRECTORIES = new Set(["node_modules", "dist", ".turbo", "coverage"]);

function packageFiles(directory: string, files: string[] = []): string[] {
  for (const name of readdirSync(directory)) {
    if (SKIP_DIRECTORIES.has(name) || name.startsWith(".")) continue;
    const path = join(directory, name);
    if (statSync(path).isDirectory()) packageFiles(path, files);
    else if (/\.(?:ts|mts|mjs|js|json|jsonl|md)$/.test(name)) files.push(path);
  }
  return files;
}

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}@.]+/u)
    .filter((word) => word.length > 0);

/**
 * A labelled value is a quotation when it is distinctive: it holds a digit or two words. A
 * single word (a given name such as one in the public-domain SSA table the lexicon is built
 * from) is not, and neither are the labels that are not personal data (places, titles).
 */
function distinctive(entity: { type: string; value: string }): boolean {
  if (["LOCATION", "NRP", "TITLE", "ORGANIZATION"].includes(entity.type)) return false;
  return entity.value.length >= 6 && /\d|\S\s+\S/.test(entity.value);
}

const corpusPath = publicCorpusPath([]);

it.runIf(corpusPath !== undefined)(
  `no file of the package quotes a row of the public test subset (${PUBLIC_CORPUS_ENV})`,
  () => {
    const testRows = loadPiiRows(corpusPath).filter(isPublicTestRow);
    expect(testRows.length).toBeGreaterThan(0);
    const shingles = new Map<string, string>();
    const values = new Map<string, string>();
    for (const row of testRows) {
      const rowWords = words(row.text);
      for (let index = 0; index + 8 <= rowWords.length; index++)
        shingles.set(rowWords.slice(index, index + 8).join(" "), row.id);
      for (const entity of row.entities)
        if (distinctive(entity)) values.set(entity.value, `${row.id} ${entity.type}`);
    }
    const quoted: string[] = [];
    for (const file of packageFiles(PACKAGE_ROOT)) {
      const text = readFileSync(file, "utf8");
      const name = relative(PACKAGE_ROOT, file);
      const fileWords = words(text);
      for (let index = 0; index + 8 <= fileWords.length; index++) {
        const row = shingles.get(fileWords.slice(index, index + 8).join(" "));
        if (row !== undefined) quoted.push(`${name}: 8 words of ${row}`);
      }
      // Only ids and types are printed: a failure must not quote the row either.
      for (const [value, where] of values)
        if (text.includes(value)) quoted.push(`${name}: ${where}`);
    }
    expect([...new Set(quoted)]).toEqual([]);
  },
);

it.skipIf(corpusPath !== undefined)(
  `quotations of the public test subset: skipped, set ${PUBLIC_CORPUS_ENV}=<path to pii.jsonl> to check`,
  () => {},
);
