// Precision and recall per type and per language, at a confidence threshold, on the corpus
// written for the context detectors (corpus/pii-locales.jsonl: thirteen languages, dev and test templates)
// and, only when LOOPGUARD_PII_CORPUS (or --corpus PATH) names it, on the public corpus's test
// subset (presidio_research_synth: measured, never tuned on). Prints figures; asserts nothing.
//
//   pnpm --filter @loopguard/redact build
//   node bench/pii-measure.mjs                      # the default threshold
//   node bench/pii-measure.mjs --threshold 0.7      # another one
//   LOOPGUARD_PII_CORPUS=../shared/data/pii.jsonl node bench/pii-measure.mjs
//
// Public test rows are scored in memory; only counts are printed, never their text or values.
import { DEFAULT_THRESHOLD, redact } from "../dist/index.js";
import {
  LOCALES_PATH,
  loadPiiRows,
  PUBLIC_CORPUS_ENV,
  publicCorpusPath,
  scorePii,
  splitPublicRows,
} from "./pii-data.mjs";

const flag = process.argv.indexOf("--threshold");
const threshold = flag === -1 ? DEFAULT_THRESHOLD : Number(process.argv[flag + 1]);
const format = (value) => (value === undefined ? "  -  " : value.toFixed(3));
const CONTEXT = ["PERSON", "ADDRESS", "DATE_OF_BIRTH"];
const REPORTED = [...CONTEXT, "PHONE", "EMAIL", "US_SSN", "IP_ADDRESS"];

const scoreAt = (rows, level) =>
  scorePii(rows, (text) => redact(text, { threshold: level }).findings);

/**
 * The share of the gold values' characters (not spaces) that end up inside a finding of any
 * type: a match by overlap can still leave a town or a house number in the clear; this says
 * how much of each type was actually hidden.
 */
function coverage(rows, level) {
  const perType = new Map();
  for (const row of rows) {
    const findings = redact(row.text, { threshold: level }).findings;
    for (const entity of row.entities) {
      let total = 0;
      let covered = 0;
      for (let index = entity.start; index < entity.end; index++) {
        if (/\s/.test(row.text[index])) continue;
        total++;
        if (findings.some((finding) => finding.start <= index && index < finding.end)) covered++;
      }
      const entry = perType.get(entity.type) ?? { total: 0, covered: 0 };
      entry.total += total;
      entry.covered += covered;
      perType.set(entity.type, entry);
    }
  }
  return perType;
}

function typeTable(title, parts) {
  console.log(`\n### ${title}\n`);
  console.log(
    `| type | ${parts.map(([name]) => `${name}: recall / precision (gold)`).join(" | ")} |`,
  );
  console.log(`|---|${parts.map(() => "---:").join("|")}|`);
  const scores = parts.map(([, rows]) => scoreAt(rows, threshold));
  const covers = parts.map(([, rows]) => coverage(rows, threshold));
  for (const type of REPORTED) {
    const cells = scores.map((score, index) => {
      const entry = score.perType.get(type);
      if (entry === undefined) return "none";
      const cover = covers[index].get(type);
      const hidden =
        cover === undefined || cover.total === 0
          ? ""
          : `, ${((100 * cover.covered) / cover.total).toFixed(1)}% of characters hidden`;
      return `${format(entry.recall)} / ${format(entry.precision)} (${entry.gold}${hidden})`;
    });
    if (cells.every((cell) => cell === "none")) continue;
    console.log(`| ${type} | ${cells.join(" | ")} |`);
  }
  for (const [index, score] of scores.entries()) {
    if (score.lookalikeTotal === 0) continue;
    const eaten = [...score.lookalikes.values()]
      .filter((entry) => entry.kept < entry.total)
      .map((entry) => `${entry.kind} ${entry.total - entry.kept}/${entry.total}`);
    console.log(
      `\n${parts[index][0]}: look-alikes kept ${score.lookalikeKept} of ${score.lookalikeTotal} (${((100 * score.lookalikeKept) / score.lookalikeTotal).toFixed(1)}%)${eaten.length > 0 ? `; eaten: ${eaten.join(", ")}` : ""}`,
    );
  }
  return scores;
}

console.log(`# @loopguard/redact: per type, per language, threshold ${threshold}`);

const locales = loadPiiRows(LOCALES_PATH);
const dev = locales.filter((row) => row.subset === "locales_dev");
const test = locales.filter((row) => row.subset === "locales_test");
typeTable(`Locale corpus (corpus/pii-locales.jsonl, ${locales.length} rows)`, [
  ["locales DEV", dev],
  ["locales TEST", test],
]);

console.log("\n### Recall per language, locale corpus (dev + test templates)\n");
const languages = [...new Set(locales.map((row) => row.meta.language))];
const perLanguageTypes = ["PERSON", "ADDRESS", "DATE_OF_BIRTH", "PHONE", "EMAIL"];
console.log(`| language | ${perLanguageTypes.join(" | ")} | look-alikes kept |`);
console.log(`|---|${perLanguageTypes.map(() => "---:").join("|")}|---:|`);
for (const language of languages) {
  const score = scoreAt(
    locales.filter((row) => row.meta.language === language),
    threshold,
  );
  const cells = perLanguageTypes.map((type) => {
    const entry = score.perType.get(type);
    return entry === undefined || entry.gold === 0
      ? "-"
      : `${format(entry.recall)} (${entry.found}/${entry.gold})`;
  });
  console.log(
    `| ${language} | ${cells.join(" | ")} | ${score.lookalikeKept}/${score.lookalikeTotal} |`,
  );
}

// What the figures owe to the lexicon: how many of the names the generator writes the
// detector's lists also hold (read from the generator's own rows: every PERSON value's words).
{
  const { readFileSync } = await import("node:fs");
  const lexiconSource = ["../src/lexicon/name-lexicon.ts", "../src/lexicon/names-by-language.ts"]
    .map((path) => readFileSync(new URL(path, import.meta.url), "utf8").toLowerCase())
    .join("\n");
  const known = new Set(lexiconSource.match(/[\p{L}'-]+/gu));
  const words = new Set();
  for (const row of locales)
    for (const entity of row.entities)
      if (entity.type === "PERSON")
        for (const word of entity.value.toLowerCase().split(/[\s\u3000]+/))
          if (/^[\p{Script=Latin}'-]+$/u.test(word) && word.length > 2) words.add(word);
  const shared = [...words].filter((word) => known.has(word));
  console.log(
    `\nLexicon overlap: ${shared.length} of the ${words.size} distinct Latin-script name words the generator writes are in the detector's lists (${shared.sort().join(", ")}); the rest are found by cue or shape.`,
  );
}

const publicPath = publicCorpusPath();
let publicTest = [];
if (publicPath === undefined) {
  console.log(
    `\n(The public test subset was not measured: set ${PUBLIC_CORPUS_ENV}=/path/to/pii.jsonl to add it.)`,
  );
} else {
  publicTest = splitPublicRows(loadPiiRows(publicPath)).test;
  typeTable(
    `Public corpus TEST subset presidio_research_synth (${publicTest.length} rows; measured only)`,
    [["public TEST", publicTest]],
  );
}

console.log("\n### Threshold sweep: recall / precision of the context types\n");
const sweeps = [
  ["locales DEV", dev],
  ["locales TEST", test],
];
if (publicTest.length > 0) sweeps.push(["public TEST", publicTest]);
console.log(
  `| threshold | ${sweeps.flatMap(([name]) => CONTEXT.map((type) => `${name} ${type}`)).join(" | ")} |`,
);
console.log(`|---:|${sweeps.flatMap(() => CONTEXT.map(() => "---:")).join("|")}|`);
for (const level of [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) {
  const cells = sweeps.flatMap(([, rows]) => {
    const score = scoreAt(rows, level);
    return CONTEXT.map((type) => {
      const entry = score.perType.get(type);
      return entry === undefined || entry.gold === 0
        ? "-"
        : `${format(entry.recall)} / ${format(entry.precision)}`;
    });
  });
  console.log(`| ${level.toFixed(1)} | ${cells.join(" | ")} |`);
}
