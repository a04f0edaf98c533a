// Accuracy and throughput of @loopguard/redact on the shared PII corpus, beside a popular
// npm redaction package. Run with `pnpm --filter @loopguard/redact bench` (it builds first).
// It prints figures and asserts nothing about time.
import { SyncRedactor } from "@dawn-analytics/redact-pii";
import { redact } from "../dist/index.js";
import {
  loadPiiRows,
  NER_TYPES,
  OTHER_PATTERN_TYPES,
  PATTERN_TYPES,
  PII_PATH,
  scorePii,
} from "./pii-data.mjs";

let rows;
try {
  rows = loadPiiRows();
} catch (error) {
  console.error(error.message);
  process.exit(1);
}

const format = (value) => (value === undefined ? "  -  " : value.toFixed(3));
const pad = (text, width) => String(text).padEnd(width);

// Accuracy: the default configuration, plus URL (off by default) for its separate row.
const defaults = scorePii(rows, (text) => redact(text).findings);
const withUrl = scorePii(
  rows,
  (text) =>
    redact(text, {
      types: [
        "SECRET",
        "EMAIL",
        "CREDIT_CARD",
        "IBAN",
        "US_SSN",
        "IP_ADDRESS",
        "MAC_ADDRESS",
        "PHONE",
        "URL",
      ],
    }).findings,
);

console.log(`# @loopguard/redact on ${PII_PATH}`);
console.log(
  `${rows.length} rows, ${defaults.negatives} negatives. A match is an overlapping span of the same type.\n`,
);
console.log("| type | gold | recall | precision | note |");
console.log("|---|---:|---:|---:|---|");
for (const type of PATTERN_TYPES) {
  const entry = defaults.perType.get(type);
  console.log(
    `| ${type} | ${entry?.gold ?? 0} | ${format(entry?.recall)} | ${format(entry?.precision)} | |`,
  );
}
for (const type of OTHER_PATTERN_TYPES) {
  const source = type === "URL" ? withUrl : defaults;
  const entry = source.perType.get(type);
  console.log(
    `| ${type} | ${entry?.gold ?? 0} | ${format(entry?.recall)} | ${format(entry?.precision)} | ${type === "URL" ? "opt-in type; schemes and www. only" : "on by default"} |`,
  );
}
const others = [...defaults.perType.values()].filter(
  (entry) =>
    !PATTERN_TYPES.includes(entry.type) &&
    !OTHER_PATTERN_TYPES.includes(entry.type) &&
    !NER_TYPES.includes(entry.type) &&
    entry.gold > 0,
);
for (const entry of others)
  console.log(`| ${entry.type} | ${entry.gold} | ${format(entry.recall)} | n/a | no detector |`);
for (const type of NER_TYPES)
  console.log(
    `| ${type} | ${defaults.perType.get(type)?.gold ?? 0} | n/a | n/a | names and places: out of scope for pattern detectors |`,
  );

console.log("\nNegative rows flagged for the type they imitate:");
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
    `- ${pad(type, 12)} ${flagged.length}${flagged.length > 0 ? `: ${flagged.map((item) => `${item.id} ${JSON.stringify(item.text)}`).join("; ")}` : ""}`,
  );
}

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
