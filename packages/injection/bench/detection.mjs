// Detection, false positives, throughput and worst case of the heuristic scanner, side by side
// with @andersmyrmel/vard (a popular pure-JS prompt-injection detector).
//
//   pnpm --filter @loopguard/injection bench            # figures
//   pnpm --filter @loopguard/injection bench --misses   # also print missed DEV rows (never test rows)
//
// Prints figures; asserts nothing about time.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "../../..");
const dataPath = resolve(repoRoot, "../shared/data/injection.jsonl");
if (!existsSync(dataPath)) {
  console.error(
    `[injection bench] ${dataPath} is missing: the labelled corpus lives in shared/data beside the repository (see shared/data/README.md)`,
  );
  process.exit(1);
}

let heuristicScanner;
try {
  ({ heuristicScanner } = await import("../dist/index.js"));
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

const devSubsets = [
  "agentdojo_injected_tool_output",
  "agentdojo_clean_tool_output",
  "garak_latent_injection",
  "garak_clean_context",
  "llm_guard_unit_tests",
  "notinject_hard_negative",
  "pint_example",
];
const rows = readFileSync(dataPath, "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line));
const isDev = (row) => devSubsets.includes(row.subset);

const scanner = heuristicScanner();
const vardCheck = vard ? vard.moderate().maxLength(100_000_000) : undefined;
const flaggedByUs = (text) => scanner.scan(text, { source: "document" }).verdict !== "clean";
const flaggedByVard = (text) => {
  try {
    return !vardCheck.safeParse(text).safe;
  } catch {
    return true;
  }
};

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
  console.log(`| subset | label | n | flagged (loopguard) |${vard ? " flagged (vard) |" : ""}`);
  console.log(`|---|---|---:|---:|${vard ? "---:|" : ""}`);
  const totals = { injection: [0, 0, 0], benign: [0, 0, 0] };
  for (const [key, group] of [...groups].sort()) {
    const [subset, label] = key.split("\u0000");
    const ours = group.filter((row) => flaggedByUs(row.text)).length;
    const theirs = vard ? group.filter((row) => flaggedByVard(row.text)).length : 0;
    totals[label][0] += group.length;
    totals[label][1] += ours;
    totals[label][2] += theirs;
    console.log(
      `| ${subset} | ${label} | ${group.length} | ${pct(ours, group.length)} |${vard ? ` ${pct(theirs, group.length)} |` : ""}`,
    );
  }
  const [ni, oi, ti] = totals.injection;
  const [nb, ob, tb] = totals.benign;
  console.log(
    `| **all injections (detection)** | injection | ${ni} | **${pct(oi, ni)}** |${vard ? ` ${pct(ti, ni)} |` : ""}`,
  );
  console.log(
    `| **all benign (false positives)** | benign | ${nb} | **${pct(ob, nb)}** |${vard ? ` ${pct(tb, nb)} |` : ""}`,
  );
  return { detection: oi / ni, falsePositives: ob / nb };
}

console.log(
  `loopguard heuristicScanner vs ${vard ? "@andersmyrmel/vard 1.2.0 (moderate preset)" : "nothing"}; "flagged" = verdict not clean`,
);
console.log(`corpus: ${dataPath} (${rows.length} rows)`);
const dev = table(rows.filter(isDev), "DEV subsets (rules were tuned on these)");
const test = table(
  rows.filter((row) => !isDev(row)),
  "TEST subsets (never tuned on)",
);
console.log(
  `\ndev: detection ${(100 * dev.detection).toFixed(1)}% (target >= 95%), false positives ${(100 * dev.falsePositives).toFixed(1)}% (target <= 2%)`,
);
console.log(
  `test: detection ${(100 * test.detection).toFixed(1)}%, false positives ${(100 * test.falsePositives).toFixed(1)}%`,
);

if (process.argv.includes("--misses")) {
  console.log("\nDEV misses and false positives:");
  for (const row of rows.filter(isDev)) {
    const result = scanner.scan(row.text, { source: "document" });
    const flagged = result.verdict !== "clean";
    if (flagged !== (row.label === "injection")) {
      console.log(
        `- [${row.subset}/${row.label}] ${result.verdict} ${result.score} ${[...new Set(result.findings.map((finding) => finding.rule))].join(",")}: ${JSON.stringify(row.text.slice(0, 300))}`,
      );
    }
  }
}

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
  for (const text of texts) scanner.scan(text, { source: "document" });
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
console.log(`| loopguard heuristicScanner | ${mbps(ourMs).toFixed(2)} | 1.00 |`);
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
  const ours = timeIt(() => scanner.scan(text, { source: "document" }), 200);
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
