// Throughput with every detector on beside the pattern types alone (EMAIL, PHONE, CREDIT_CARD,
// US_SSN, IBAN, IP_ADDRESS, MAC_ADDRESS, SECRET: `createRedactor({ types: PATTERN_TYPES })`),
// in one process, in turns, best of 9 rounds of CPU time (other jobs on a shared machine do not
// count). The goals: at least 20 MB/s on clean prose with every detector on, at least
// 150 MB/s with the pattern types alone. Prints figures and whether each goal was met; asserts
// nothing about time.
//
//   pnpm --filter @loopguard/redact build && node bench/throughput-types.mjs
import { DEFAULT_TYPES, PATTERN_TYPES, redact } from "../dist/index.js";
import { LOCALES_PATH, loadPiiRows } from "./pii-data.mjs";

const SIZE = 1_000_000;
function repeat(sentences) {
  let text = "";
  for (let index = 0; text.length < SIZE; index++) {
    text += sentences[index % sentences.length];
    text += index % 5 === 4 ? "\n" : " ";
  }
  return text;
}
// Prose with nothing personal in it, lower case only (the cheapest case) and as people write
// it: capitals, products, places, order numbers, dates, versions, amounts.
const lowerCase = repeat([
  "the order arrived on time and the customer asked about the refund policy for damaged items,",
  "so we checked the warehouse notes and replied within the hour.",
]);
const written = repeat([
  "The March release of Orchid Sync 4.2.1.9 fixed the export bug that Customer Success reported.",
  "Order 55120 shipped from the Rotterdam warehouse on 14 May 2025 and arrived two days later.",
  "Our Berlin office moved the weekly Status Review to Thursday at 10:30 for the Q3 planning.",
  "Please update the Windows agent to build 10.0.22621.2861 before the audit next Monday.",
  "Invoice INV-2025-0042 for EUR 1,250.00 is due in 30 days; the discount code is SPRING25.",
  "New York and San Francisco teams use the same Billing Dashboard since the January update.",
]);
const dense = (() => {
  const rows = loadPiiRows(LOCALES_PATH);
  let text = "";
  for (let index = 0; text.length < 300_000; index++) text += `${rows[index % rows.length].text}\n`;
  return text;
})();

const configurations = [
  ["every detector", { types: [...DEFAULT_TYPES] }],
  ["pattern types alone", { types: [...PATTERN_TYPES] }],
];
const cpuMs = (work) => {
  const started = process.cpuUsage();
  work();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
};

console.log(
  "| input | size | every detector MB/s | pattern types alone MB/s | all ÷ patterns | goals (20 / 150 MB/s on clean prose) |",
);
console.log("|---|---:|---:|---:|---:|---|");
for (const [name, text, goals] of [
  ["clean prose, lower case", lowerCase, true],
  ["clean prose as written (capitals, products, dates, versions)", written, true],
  ["PII-dense, locale corpus rows", dense, false],
]) {
  for (const [, options] of configurations)
    for (let warm = 0; warm < 2; warm++) redact(text, options);
  const best = configurations.map(() => Number.POSITIVE_INFINITY);
  for (let round = 0; round < 9; round++) {
    configurations.forEach(([, options], index) => {
      best[index] = Math.min(
        best[index],
        cpuMs(() => redact(text, options)),
      );
    });
  }
  const rates = best.map((ms) => text.length / 1e6 / (ms / 1000));
  const [all, patterns] = rates;
  const verdict = goals
    ? `${all >= 20 ? "met" : "NOT met"} / ${patterns >= 150 ? "met" : "NOT met"}`
    : "(no goal)";
  console.log(
    `| ${name} | ${(text.length / 1e6).toFixed(1)} MB | ${all.toFixed(1)} | ${patterns.toFixed(1)} | ${(all / patterns).toFixed(2)}x | ${verdict} |`,
  );
}
