// Detection, false positives, latency, throughput and worst case of the heuristic, learned and default scanners,
// with @andersmyrmel/vard (a popular pure-JS prompt-injection detector).
//
//   pnpm --filter @loopguard/injection bench            # figures
//   pnpm --filter @loopguard/injection bench --misses   # also print missed DEV rows (never test rows)
//
// Prints figures; asserts nothing about time.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { noCorpusMessage, publicCorpusPath } from "./public-corpus.mjs";

const dataPath = publicCorpusPath();
if (!dataPath) {
  // Detection is scored per subset of the labelled corpus; without one there is nothing to score.
  console.log(noCorpusMessage);
  process.exit(0);
}

let heuristicScanner;
let learnedScanner;
let defaultScanner;
try {
  ({ heuristicScanner, learnedScanner, defaultScanner } = await import("../dist/index.js"));
} catch (error) {
  console.error(
    `[injection bench] cannot load ../dist/index.js (${error.message}); build first: pnpm --filter @loopguard/core build && pnpm --filter @loopguard/injection bench`,
  );
  process.exit(1);
}
let vard;
try {
  vard = (await import("@andersmyrmel/vard")).default;
} catch {
  console.warn(
    "[injection bench] @andersmyrmel/vard is not installed; comparison columns are left out",
  );
}

const { devSubsets } = await import("../dist/corpus-subsets.js");
const rows = readFileSync(dataPath, "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line));
const isDev = (row) => devSubsets.has(row.subset);

const scanner = heuristicScanner();
const learned = learnedScanner();
const composite = defaultScanner();
const vardCheck = vard ? vard.moderate().maxLength(100_000_000) : undefined;
const flaggedBy = (candidate) => (text) =>
  candidate.scan(text, { source: "document" }).verdict !== "clean";
const flaggedByVard = (text) => {
  try {
    return !vardCheck.safeParse(text).safe;
  } catch {
    return true;
  }
};
const columns = [
  ["heuristic (rules alone)", flaggedBy(scanner)],
  ["learned alone", flaggedBy(learned)],
  ["**defaultScanner()** (rules + learned)", flaggedBy(composite)],
  ...(vard ? [["vard 1.2.0", flaggedByVard]] : []),
];

const pct = (part, whole) =>
  whole === 0 ? "   -  " : `${((100 * part) / whole).toFixed(1).padStart(5)}%`;

function table(selected, title) {
  const groups = new Map();
  for (const row of selected) {
    const key = `${row.subset}\u0000${row.label}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(row);
  }
  console.log(`\n${title}`);
  console.log(`| subset | label | n | ${columns.map(([name]) => name).join(" | ")} |`);
  console.log(`|---|---|---:|${columns.map(() => "---:|").join("")}`);
  const totals = { injection: [0, ...columns.map(() => 0)], benign: [0, ...columns.map(() => 0)] };
  for (const [key, group] of [...groups].sort()) {
    const [subset, label] = key.split("\u0000");
    const counts = columns.map(([, flagged]) => group.filter((row) => flagged(row.text)).length);
    totals[label][0] += group.length;
    counts.forEach((count, index) => {
      totals[label][index + 1] += count;
    });
    console.log(
      `| ${subset} | ${label} | ${group.length} | ${counts.map((count) => pct(count, group.length)).join(" | ")} |`,
    );
  }
  const [ni, ...oi] = totals.injection;
  const [nb, ...ob] = totals.benign;
  console.log(
    `| **all injections (detection)** | injection | ${ni} | ${oi.map((count) => `**${pct(count, ni)}**`).join(" | ")} |`,
  );
  console.log(
    `| **all benign (false positives)** | benign | ${nb} | ${ob.map((count) => `**${pct(count, nb)}**`).join(" | ")} |`,
  );
  return { detection: oi[2] / ni, falsePositives: ob[2] / nb };
}

console.log(
  `loopguard heuristicScanner, learnedScanner and defaultScanner${vard ? " vs @andersmyrmel/vard 1.2.0 (moderate preset)" : ""}; "flagged" = verdict not clean`,
);
console.log(`corpus: ${dataPath} (${rows.length} rows)`);
const dev = table(rows.filter(isDev), "DEV subsets (rules written and model trained on these)");
const test = table(
  rows.filter((row) => !isDev(row)),
  "TEST subsets (never tuned on)",
);
console.log(
  `\ndefaultScanner dev: detection ${(100 * dev.detection).toFixed(1)}% (target >= 95%), false positives ${(100 * dev.falsePositives).toFixed(1)}% (target <= 2%)`,
);
console.log(
  `defaultScanner test: detection ${(100 * test.detection).toFixed(1)}%, false positives ${(100 * test.falsePositives).toFixed(1)}% (target >= 85% / <= 5% per subset)`,
);

// --- Latency per 2 KB tool output (p50 of single scans) --------------------------------------
const twoKb = rows
  .map((row) => row.text)
  .filter((text) => text.length >= 1500)
  .map((text) =>
    text.length > 2048 ? text.slice(0, 2048) : text.padEnd(2048, " Shipping takes three days."),
  );
function p50(candidate) {
  const samples = [];
  for (let round = 0; round < 3; round++)
    for (const text of twoKb) {
      const started = performance.now();
      candidate.scan(text, { source: "tool_output" });
      samples.push(performance.now() - started);
    }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] * 1000;
}
const latencies = [
  ["heuristic", p50(scanner)],
  ["learned", p50(learned)],
  ["default", p50(composite)],
];
console.log(
  `\nLatency per 2 KB text (${twoKb.length} corpus texts cut or padded to 2,048 chars, p50 of single scans)`,
);
console.log("| scanner | p50 µs | ratio to heuristic |");
console.log("|---|---:|---:|");
for (const [label, micros] of latencies)
  console.log(`| ${label} | ${micros.toFixed(1)} | ${(micros / latencies[0][1]).toFixed(2)} |`);

if (process.argv.includes("--misses")) {
  console.log("\nDEV misses and false positives of defaultScanner():");
  for (const row of rows.filter(isDev)) {
    const result = composite.scan(row.text, { source: "document" });
    const flagged = result.verdict !== "clean";
    if (flagged !== (row.label === "injection")) {
      console.log(
        `- [${row.subset}/${row.label}] ${result.verdict} ${result.score} ${[...new Set(result.findings.map((finding) => finding.rule))].join(",")}: ${JSON.stringify(row.text.slice(0, 300))}`,
      );
    }
  }
}
if (process.argv.includes("--quick")) process.exit(0);

// --- Throughput on mixed text ---------------------------------------------------------------
function timeIt(fn, minMs = 400) {
  let runs = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    fn();
    runs += 1;
    elapsed = performance.now() - start;
  } while (elapsed < minMs);
  return elapsed / runs;
}

const texts = rows.map((row) => row.text);
const corpusBytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
const ourMs = timeIt(() => {
  for (const text of texts) composite.scan(text, { source: "document" });
});
const vardMs = vard
  ? timeIt(() => {
      for (const text of texts) flaggedByVard(text);
    })
  : undefined;
const mbps = (ms) => corpusBytes / 1e6 / (ms / 1000);
console.log(
  `\nThroughput on mixed text (all ${rows.length} corpus rows, ${(corpusBytes / 1e6).toFixed(2)} MB per pass, one scan per row)`,
);
console.log("| scanner | MB/s | ratio |");
console.log("|---|---:|---:|");
console.log(`| loopguard defaultScanner | ${mbps(ourMs).toFixed(2)} | 1.00 |`);
if (vardMs)
  console.log(
    `| vard moderate | ${mbps(vardMs).toFixed(2)} | ${(mbps(vardMs) / mbps(ourMs)).toFixed(2)} |`,
  );

// --- Worst case on adversarial input --------------------------------------------------------
const megabyte = 1_000_000;
const capMs = 20_000;
const fill = (unit) => unit.repeat(Math.ceil(megabyte / unit.length)).slice(0, megabyte);

/** Times vard in a worker and stops it after `capMs` (it can backtrack for minutes). */
function timeVard(unit) {
  return new Promise((resolvePromise) => {
    const worker = new Worker(new URL("./vard-worker.mjs", import.meta.url), {
      workerData: { unit, size: megabyte },
    });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolvePromise(Number.POSITIVE_INFINITY);
    }, capMs);
    worker.once("message", (ms) => {
      clearTimeout(timer);
      void worker.terminate();
      resolvePromise(ms);
    });
    worker.once("error", () => {
      clearTimeout(timer);
      resolvePromise(Number.NaN);
    });
  });
}

const adversarial = [
  ["1 MB of 'ignore '", "ignore "],
  ["1 MB of 'ignore all previous '", "ignore all previous "],
  ["1 MB base64-looking run", "QWxhZGRpbjpvcGVuIHNlc2FtZQ"],
  ["1 MB of nested tags '<a><b>'", "<a><b>"],
  ["1 MB of unclosed '<div class=\"'", '<div class="'],
  ["1 MB of '<!--'", "<!--"],
  ["1 MB of '%41'", "%41"],
  ["1 MB of '&#x3c;'", "&#x3c;"],
  ["1 MB of '[system'", "[system"],
  ["1 MB of zero-width + 'a'", "a\u200b"],
  ["1 MB of Cyrillic look-alikes 'іgnоrе '", "іgnоrе "],
  ["1 MB without spaces 'aaaa'", "a"],
];
console.log(
  `\nWorst case on adversarial input (ms per 1 MB scan, lower is better; vard is stopped after ${capMs / 1000} s)`,
);
console.log(`| input | loopguard ms |${vard ? " vard ms | vard / loopguard |" : ""}`);
console.log(`|---|---:|${vard ? "---:|---:|" : ""}`);
let worst = 0;
for (const [label, unit] of adversarial) {
  const text = fill(unit);
  const ours = timeIt(() => composite.scan(text, { source: "document" }), 200);
  worst = Math.max(worst, ours);
  const theirs = vard ? await timeVard(unit) : undefined;
  const shown =
    theirs === Number.POSITIVE_INFINITY
      ? `> ${capMs}`
      : Number.isNaN(theirs)
        ? "error"
        : theirs?.toFixed(1);
  const ratio =
    theirs === Number.POSITIVE_INFINITY
      ? `> ${(capMs / ours).toFixed(0)}`
      : Number.isNaN(theirs)
        ? "-"
        : (theirs / ours).toFixed(2);
  console.log(`| ${label} | ${ours.toFixed(1)} |${vard ? ` ${shown} | ${ratio} |` : ""}`);
}
console.log(
  `\nloopguard worst case: ${worst.toFixed(1)} ms per MB (${(1000 / worst).toFixed(2)} MB/s)`,
);
