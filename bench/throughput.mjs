// Redaction and injection scanning throughput, side by side with popular npm packages that do
// the same job, on the same input: `node throughput.mjs [milliseconds per figure]`.
//
// Inputs are the labelled corpora in shared/data (the ones the packages are scored on):
// every row of pii.jsonl for redaction, every row of injection.jsonl for scanning, one call
// per row, plus a 2 KB page of plain prose (the tool output of loop-overhead.mjs). Prints one
// JSON line of MB/s per system and input; asserts nothing about time.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { prosePage } from "./payload.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const budgetMs = Number(process.argv[2] ?? 600);
const dataDir = resolve(here, "../../shared/data");
const corpus = (name) => {
  const path = resolve(dataDir, name);
  if (!existsSync(path))
    throw new Error(
      `[bench] ${path} is missing: the corpora live in shared/data beside the repository`,
    );
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line).text);
};

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
const pii = corpus("pii.jsonl");
result.redaction.corpus = { rows: pii.length };
for (const [input, texts] of [
  ["pii.jsonl", pii],
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
const injection = corpus("injection.jsonl");
result.scanning.corpus = { rows: injection.length };
for (const [input, texts] of [
  ["injection.jsonl", injection],
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
