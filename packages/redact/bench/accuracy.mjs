// Accuracy and throughput of @loopguard/redact on the generated corpus (always) and the public
// PII corpus (when LOOPGUARD_PII_CORPUS or --corpus names it), beside a popular npm redaction
// package. Run with `pnpm --filter @loopguard/redact bench` (it builds first). It prints
// figures and asserts nothing about time.
import { SyncRedactor } from "@dawn-analytics/redact-pii";
import { redact } from "../dist/index.js";
import {
  GENERATED_PATH,
  loadPiiRows,
  NER_TYPES,
  OTHER_PATTERN_TYPES,
  PATTERN_TYPES,
  PUBLIC_CORPUS_ENV,
  publicCorpusPath,
  scorePii,
  splitPublicRows,
} from "./pii-data.mjs";

const format = (value) => (value === undefined ? "  -  " : value.toFixed(3));
const pad = (text, width) => String(text).padEnd(width);
const CONTEXT_TYPES = ["PERSON", "ADDRESS", "DATE_OF_BIRTH"];
const ALL_TYPES = [
  "SECRET",
  "EMAIL",
  "CREDIT_CARD",
  "IBAN",
  "US_SSN",
  "IP_ADDRESS",
  "MAC_ADDRESS",
  "PHONE",
  "URL",
  "PERSON",
  "ADDRESS",
  "DATE_OF_BIRTH",
];

/** Prints recall and precision per type and the look-alikes kept, for one set of rows. */
function report(title, rows, { publicCorpus = false } = {}) {
  const defaults = scorePii(rows, (text) => redact(text).findings);
  const withUrl = scorePii(rows, (text) => redact(text, { types: ALL_TYPES }).findings);
  console.log(`\n## ${title}\n`);
  console.log(
    `${rows.length} rows. A match is an overlapping span of the same type; a look-alike is kept when no finding touches it.\n`,
  );
  console.log("| type | gold | recall | precision | note |");
  console.log("|---|---:|---:|---:|---|");
  for (const type of [...PATTERN_TYPES, ...OTHER_PATTERN_TYPES, ...CONTEXT_TYPES]) {
    const source = type === "URL" ? withUrl : defaults;
    const entry = source.perType.get(type);
    if ((entry?.gold ?? 0) === 0 && (entry?.predicted ?? 0) === 0) continue;
    const note =
      type === "URL" ? "opt-in type" : CONTEXT_TYPES.includes(type) ? "context detector" : "";
    console.log(
      `| ${type} | ${entry?.gold ?? 0} | ${format(entry?.recall)} | ${format(entry?.precision)} | ${note} |`,
    );
  }
  if (publicCorpus) {
    for (const entry of defaults.perType.values()) {
      if (
        [...PATTERN_TYPES, ...OTHER_PATTERN_TYPES, ...CONTEXT_TYPES, ...NER_TYPES].includes(
          entry.type,
        ) ||
        entry.gold === 0
      )
        continue;
      console.log(
        `| ${entry.type} | ${entry.gold} | ${format(entry.recall)} | n/a | no detector |`,
      );
    }
    for (const type of NER_TYPES.filter((type) => !CONTEXT_TYPES.includes(type)))
      console.log(
        `| ${type} | ${defaults.perType.get(type)?.gold ?? 0} | n/a | n/a | places and organisations: no detector |`,
      );
  }
  if (defaults.lookalikeTotal > 0) {
    console.log(
      `\nLook-alikes kept: ${defaults.lookalikeKept} of ${defaults.lookalikeTotal} (${((100 * defaults.lookalikeKept) / defaults.lookalikeTotal).toFixed(1)}%)\n`,
    );
    console.log("| look-alike | imitates | kept | of | rate | eaten (first 3) |");
    console.log("|---|---|---:|---:|---:|---|");
    for (const entry of defaults.lookalikes.values())
      console.log(
        `| ${entry.kind} | ${entry.imitates} | ${entry.kept} | ${entry.total} | ${format(entry.rate)} | ${entry.eaten
          .slice(0, 3)
          .map((eaten) => `${JSON.stringify(eaten.value)} as ${eaten.as}`)
          .join("; ")} |`,
      );
  }
  if (publicCorpus) {
    const imitating = rows.filter((row) => row.entities.length === 0);
    console.log(
      `\nNegative rows (${defaults.negatives}) flagged for the type they imitate, the public corpus's look-alikes:`,
    );
    const byType = new Map();
    for (const flagged of defaults.flaggedNegatives)
      byType.set(flagged.type, [...(byType.get(flagged.type) ?? []), flagged]);
    for (const type of [
      "CREDIT_CARD",
      "IBAN",
      "US_SSN",
      "IP_ADDRESS",
      "EMAIL",
      "PHONE",
      "MAC_ADDRESS",
      "SECRET",
    ]) {
      const flagged = byType.get(type) ?? [];
      console.log(
        `- ${pad(type, 12)} ${flagged.length}${flagged.length > 0 ? `: ${flagged.map((item) => (publicCorpus === "test" ? item.id : `${item.id} ${JSON.stringify(item.text)}`)).join("; ")}` : ""}`,
      );
    }
    const kept = imitating.length - defaults.flaggedNegatives.length;
    console.log(
      `Look-alike rows kept: ${kept} of ${imitating.length} (${((100 * kept) / imitating.length).toFixed(1)}%; the SECRET ones flagged are values under secret-like names, redacted on purpose)`,
    );
  }
  return defaults;
}

const generated = loadPiiRows(GENERATED_PATH);
console.log(`# @loopguard/redact accuracy`);
report(
  "Generated corpus, dev subset (corpus/pii-corpus.jsonl, templates the rules were tuned on)",
  generated.filter((row) => row.subset === "generated_dev"),
);
report(
  "Generated corpus, test subset (templates the rules were not tuned on; written by the same hands)",
  generated.filter((row) => row.subset === "generated_test"),
);
const publicPath = publicCorpusPath();
let rows = [];
if (publicPath === undefined) {
  console.log(
    `\n(The public corpus was not given: set ${PUBLIC_CORPUS_ENV}=/path/to/pii.jsonl or pass --corpus PATH to measure on it too.)`,
  );
} else {
  rows = loadPiiRows(publicPath);
  const { dev, test } = splitPublicRows(rows);
  report(
    `Public corpus ${publicPath}, DEV subsets (Presidio's recognizer tests, detect-secrets, LLM Guard: rules were written and tuned on these rows)`,
    dev,
    { publicCorpus: "dev" },
  );
  report(
    `Public corpus ${publicPath}, TEST subset presidio_research_synth (measured only: never quoted, never read while writing a rule)`,
    test,
    { publicCorpus: "test" },
  );
}
if (rows.length === 0) rows = generated;

// Throughput: clean prose and PII-dense text, about 4 MB each, same input for both libraries.
const words =
  "the order arrived on time and the customer asked about the refund policy for damaged items, so we checked the warehouse notes and replied within the hour".split(
    " ",
  );
function cleanText(size) {
  let text = "";
  let index = 0;
  while (text.length < size) {
    text += words[index % words.length] + (index % 17 === 16 ? ".\n" : " ");
    index++;
  }
  return text;
}
function denseText(size) {
  const samples = rows.filter((row) => row.entities.length > 0).map((row) => row.text);
  let text = "";
  let index = 0;
  while (text.length < size) text += `${samples[index++ % samples.length]}\n`;
  return text;
}

const peer = new SyncRedactor();
const contenders = [
  ["@loopguard/redact", (text) => redact(text).text],
  ["@dawn-analytics/redact-pii 0.1.2", (text) => peer.redact(text)],
];

function measure(work, text, repeats) {
  // Warm up, then time each run on the same input; report median and spread (min to max).
  for (let run = 0; run < 2; run++) work(text);
  const rates = [];
  for (let run = 0; run < repeats; run++) {
    const started = process.hrtime.bigint();
    work(text);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    rates.push(text.length / 1e6 / seconds);
  }
  rates.sort((left, right) => left - right);
  return {
    median: rates[Math.floor(rates.length / 2)],
    min: rates[0],
    max: rates[rates.length - 1],
  };
}

console.log(
  "\n## Throughput (MB/s = million characters per second, near enough MB of UTF-8 for this mostly ASCII text; median of 11 runs after 2 warm-ups, [min–max])\n",
);
console.log("| input | size | @loopguard/redact | @dawn-analytics/redact-pii | ratio |");
console.log("|---|---:|---:|---:|---:|");
for (const [name, make, size] of [
  ["clean prose", cleanText, 4_000_000],
  ["PII-dense (corpus rows)", denseText, 1_000_000],
]) {
  const text = make(size);
  const results = contenders.map(([, work]) => measure(work, text, 11));
  const [ours, theirs] = results;
  const cell = (result) =>
    `${result.median.toFixed(1)} [${result.min.toFixed(1)}–${result.max.toFixed(1)}]`;
  console.log(
    `| ${name} | ${(text.length / 1e6).toFixed(1)} MB | ${cell(ours)} | ${cell(theirs)} | ${(ours.median / theirs.median).toFixed(1)}x |`,
  );
}

// What the peer finds on the same corpus, for context (it has no per-type spans, so only
// whether it changed each positive value).
let peerHits = 0;
let peerTotal = 0;
for (const row of rows) {
  const output = peer.redact(row.text);
  for (const entity of row.entities) {
    if (!PATTERN_TYPES.includes(entity.type)) continue;
    peerTotal++;
    if (!output.includes(entity.value)) peerHits++;
  }
}
console.log(
  `\nFor context, @dawn-analytics/redact-pii removed ${peerHits} of ${peerTotal} pattern-type values (${((100 * peerHits) / peerTotal).toFixed(1)}%).`,
);
