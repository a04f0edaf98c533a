// Redaction and injection scanning throughput, side by side with popular npm packages that do
// the same job, on the same input: `node throughput.mjs [milliseconds per figure]`.
//
// Inputs: every row of a PII corpus for redaction and of an injection corpus for scanning, one
// call per row, plus a 2 KB page of plain prose (the tool output of loop-overhead.mjs). The
// corpora are the public ones when named (LOOPGUARD_PII_CORPUS, a file; LOOPGUARD_CORPUS, a file
// or a folder holding injection.jsonl, as .ci/run sets them), else the ones the repository
// carries (packages/redact/corpus, packages/evals/corpora). Prints one JSON line of MB/s per
// system and input; asserts nothing about time.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { prosePage } from "./payload.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const budgetMs = Number(process.argv[2] ?? 600);
/** The corpus a variable names (a folder means its `file`), else the repository's own. */
const corpusPath = (variable, file, own) => {
  const named = process.env[variable];
  if (!named) return resolve(here, "..", own);
  const path = existsSync(named) && statSync(named).isDirectory() ? join(named, file) : named;
  if (!existsSync(path))
    throw new Error(
      `[bench] ${path} (from ${variable}) does not exist: name the corpus file, or unset ${variable} to use the repository's own`,
    );
  return resolve(path);
};
const corpus = (path) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line).text);

/** MB/s of `fn` over `texts`: warm-up, then passes for `budgetMs`, median of 5 slices. */
function throughput(texts, fn) {
  const bytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  for (const text of texts) fn(text);
  const slices = [];
  for (let slice = 0; slice < 5; slice += 1) {
    let passes = 0;
    const started = performance.now();
    let elapsed = 0;
    do {
      for (const text of texts) fn(text);
      passes += 1;
      elapsed = performance.now() - started;
    } while (elapsed < budgetMs / 5);
    slices.push((bytes * passes) / 1e6 / (elapsed / 1000));
  }
  slices.sort((a, b) => a - b);
  return {
    mbPerSecond: +slices[2].toFixed(2),
    min: +slices[0].toFixed(2),
    max: +slices[4].toFixed(2),
    bytes,
  };
}

const result = { redaction: {}, scanning: {} };
const page = [prosePage(2048)];

// Redaction: @loopguard/redact against @dawn-analytics/redact-pii (SyncRedactor, its defaults).
const { redact } = await import("@loopguard/redact");
const { SyncRedactor } = await import("@dawn-analytics/redact-pii");
const peerRedactor = new SyncRedactor();
const piiPath = corpusPath(
  "LOOPGUARD_PII_CORPUS",
  "pii.jsonl",
  "packages/redact/corpus/pii-corpus.jsonl",
);
const pii = corpus(piiPath);
result.redaction.corpus = { rows: pii.length, path: piiPath };
for (const [input, texts] of [
  [basename(piiPath), pii],
  ["2 KB prose page", page],
]) {
  result.redaction[input] = {
    "@loopguard/redact": throughput(texts, (text) => redact(text)),
    "@dawn-analytics/redact-pii": throughput(texts, (text) => peerRedactor.redact(text)),
  };
}

// Scanning: the heuristic scanner against @andersmyrmel/vard (moderate preset, as in the
// injection package's own bench).
const { heuristicScanner } = await import("@loopguard/injection");
const vard = (await import("@andersmyrmel/vard")).default;
const scanner = heuristicScanner();
const vardCheck = vard.moderate().maxLength(100_000_000);
const injectionPath = corpusPath(
  "LOOPGUARD_CORPUS",
  "injection.jsonl",
  "packages/evals/corpora/injection.jsonl",
);
const injection = corpus(injectionPath);
result.scanning.corpus = { rows: injection.length, path: injectionPath };
for (const [input, texts] of [
  [basename(injectionPath), injection],
  ["2 KB prose page", page],
]) {
  result.scanning[input] = {
    "@loopguard/injection heuristicScanner": throughput(texts, (text) =>
      scanner.scan(text, { source: "tool_output" }),
    ),
    "@andersmyrmel/vard": throughput(texts, (text) => {
      try {
        return vardCheck.safeParse(text).safe;
      } catch {
        return false;
      }
    }),
  };
}
console.log(JSON.stringify(result));
