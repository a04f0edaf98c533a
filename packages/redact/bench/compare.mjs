// Throughput of this build beside another build of @loopguard/redact (a baseline), measured in
// the same process, in turns, best of 15 rounds of CPU time: on a shared machine, other jobs'
// load neither slows one build nor the other.
//
//   node bench/compare.mjs --baseline /path/to/other/packages/redact/dist/index.js
//   LOOPGUARD_PII_CORPUS=../shared/data/pii.jsonl node bench/compare.mjs --baseline …
//
// Prints figures; asserts nothing about time.
import { loadPiiRows, publicCorpusPath } from "./pii-data.mjs";

const flag = process.argv.indexOf("--baseline");
if (flag === -1 || process.argv[flag + 1] === undefined) {
  console.error(
    "[redact] bench/compare.mjs needs --baseline <path to another build's dist/index.js>",
  );
  process.exit(1);
}
const base = await import(new URL(process.argv[flag + 1], `file://${process.cwd()}/`).href);
const now = await import("../dist/index.js");

const words =
  "the order arrived on time and the customer asked about the refund policy for damaged items, so we checked the warehouse notes and replied within the hour".split(
    " ",
  );
let clean = "";
for (let index = 0; clean.length < 1_000_000; index++)
  clean += words[index % words.length] + (index % 17 === 16 ? ".\n" : " ");
const dense = (rows) => {
  let text = "";
  for (let index = 0; text.length < 300_000; index++) text += `${rows[index % rows.length].text}\n`;
  return text;
};
const inputs = [
  ["clean prose, 1 MB", clean],
  ["PII-dense, generated corpus rows", dense(loadPiiRows())],
];
const publicPath = publicCorpusPath();
if (publicPath !== undefined)
  inputs.push(["PII-dense, public corpus rows", dense(loadPiiRows(publicPath))]);

// CPU time of this process in ms, not wall time: on a shared machine other jobs' load does not count.
const time = (work, text) => {
  const started = process.cpuUsage();
  work(text);
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
};
console.log("| input | baseline MB/s | this build MB/s | this ÷ baseline |");
console.log("|---|---:|---:|---:|");
for (const [name, text] of inputs) {
  for (let warm = 0; warm < 3; warm++) {
    base.redact(text);
    now.redact(text);
  }
  let bestBase = Number.POSITIVE_INFINITY;
  let bestNow = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 15; round++) {
    bestBase = Math.min(bestBase, time(base.redact, text));
    bestNow = Math.min(bestNow, time(now.redact, text));
  }
  const rate = (ms) => (text.length / 1e3 / ms).toFixed(1);
  console.log(
    `| ${name} | ${rate(bestBase)} | ${rate(bestNow)} | ${(bestBase / bestNow).toFixed(2)}x |`,
  );
}
