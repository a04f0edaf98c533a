// PERSON recall and precision of compromise's people() beside this package's person detector,
// on the generated corpus (dev and test) and, when given, the public one. compromise is not a
// dependency: install it somewhere and point NODE_PATH at it, e.g.
//
//   (cd /tmp/nlp && npm install compromise@14.17.0)
//   NODE_PATH=/tmp/nlp/node_modules LOOPGUARD_PII_CORPUS=../shared/data/pii.jsonl \
//     node bench/compare-compromise.mjs
//
// Prints figures; asserts nothing.
import { createRequire } from "node:module";
import { redact } from "../dist/index.js";
import {
  LOCALES_PATH,
  loadPiiRows,
  publicCorpusPath,
  scorePii,
  splitPublicRows,
} from "./pii-data.mjs";

let nlp;
try {
  const require = createRequire(`${process.env.NODE_PATH ?? process.cwd()}/`);
  nlp = (await import(require.resolve("compromise"))).default;
} catch {
  console.error(
    "[redact] bench/compare-compromise.mjs needs compromise: npm install compromise@14.17.0 in a folder and set NODE_PATH to its node_modules.",
  );
  process.exit(1);
}

const viaCompromise = (text) =>
  nlp(text)
    .people()
    .json({ offset: true })
    .filter((person) => person.offset)
    .map((person) => ({
      type: "PERSON",
      start: person.offset.start,
      end: person.offset.start + person.offset.length,
    }));
const viaRedact = (text) => redact(text, { types: ["PERSON"] }).findings;

const locales = loadPiiRows(LOCALES_PATH);
const corpora = [
  ["generated dev", loadPiiRows().filter((row) => row.subset === "generated_dev")],
  ["generated test", loadPiiRows().filter((row) => row.subset === "generated_test")],
  ["locales dev", locales.filter((row) => row.subset === "locales_dev")],
  ["locales test", locales.filter((row) => row.subset === "locales_test")],
];
const publicPath = publicCorpusPath();
if (publicPath !== undefined) {
  // The public corpus's PERSON rows are all in its test subset: measured, never tuned on.
  const { dev, test } = splitPublicRows(loadPiiRows(publicPath));
  corpora.push(["public dev", dev], ["public TEST (presidio_research_synth)", test]);
}

console.log("| corpus | finder | PERSON recall | precision | time |");
console.log("|---|---|---:|---:|---:|");
for (const [name, rows] of corpora) {
  for (const [label, find] of [
    ["compromise", viaCompromise],
    ["@loopguard/redact (PERSON only)", viaRedact],
    ["both (union)", (text) => [...viaRedact(text), ...viaCompromise(text)]],
  ]) {
    const started = performance.now();
    const entry = scorePii(rows, find).perType.get("PERSON");
    const ms = performance.now() - started;
    if (entry === undefined || entry.gold === 0) continue; // no names in these rows
    console.log(
      `| ${name} | ${label} | ${entry.recall?.toFixed(3)} | ${entry.precision?.toFixed(3) ?? "-"} | ${ms.toFixed(0)} ms |`,
    );
  }
}
