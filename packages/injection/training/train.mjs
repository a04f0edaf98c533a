// Trains the learned detector and writes weights/detector.bin.
//
//   pnpm --filter @loopguard/injection build
//   node training/train.mjs                       # generated rows only (training/rows.jsonl)
//   node training/train.mjs --data ../../../shared/data   # plus the public DEV subsets
//
// Seeded and deterministic: the same rows and flags give the same bytes. The public TEST
// subsets (bipia_*, cyberseceval_indirect, security_doc_hard_negative) are never read: rows are
// filtered by subset name before anything else touches them, and the script refuses to run if
// a test row slips through.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generator } from "./seeded-random.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const argument = (flag, fallback) => {
  const index = process.argv.indexOf(flag);
  return index >= 0 ? process.argv[index + 1] : fallback;
};
const seed = Number(argument("--seed", "7"));
const bits = Number(argument("--bits", "18"));
const epochs = Number(argument("--epochs", "4"));
const l2 = Number(argument("--l2", "1e-4"));
const window = Number(argument("--window", "3"));
const dataDir = argument("--data", undefined);
const out = resolve(argument("--out", resolve(here, "../weights/detector.bin")));
const rowsPath = resolve(argument("--rows", resolve(here, "rows.jsonl")));

let lib;
try {
  lib = { ...(await import("../dist/index.js")), ...(await import("../dist/internal/index.js")) };
} catch (error) {
  console.error(
    `[injection training] cannot load ../dist/index.js and ../dist/internal/index.js (${error.message}); run pnpm --filter @loopguard/injection build first`,
  );
  process.exit(1);
}
const {
  featureVector,
  encodeDetectorWeights,
  decodeDetectorWeights,
  learnedScanner,
  heuristicScanner,
  segmentText,
  detectorView,
} = lib;

const random = generator(seed);

const readJsonl = (path) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));

const synthetic = readJsonl(rowsPath);
const train = [];
const seenWindows = new Set();
/** Adds the windows of 1 to `window` consecutive segments of a text, labelled by `labelOf(start, end)`. */
function addWindows(text, labelOf) {
  const view = detectorView(text);
  const segments = segmentText(view.text, view.offsets);
  const added = [0, 0];
  for (let from = 0; from < segments.length; from++)
    for (let size = 1; size <= window && from + size <= segments.length; size++) {
      const start = segments[from].start;
      const end = segments[from + size - 1].end;
      const y = labelOf(start, end);
      if (y === undefined) continue;
      const piece = text.slice(start, end);
      const key = `${y}\u0000${piece}`;
      if (seenWindows.has(key)) continue;
      seenWindows.add(key);
      train.push({ text: piece, y, weight: 1 });
      added[y]++;
    }
  return added;
}
// Generated rows: a window is an injection when it overlaps the injected sentence's span.
for (const row of synthetic) {
  if (row.split !== "train") continue;
  const [spanStart, spanEnd] = row.span;
  addWindows(row.text, (start, end) =>
    row.label === "injection" && start < spanEnd && end > spanStart ? 1 : 0,
  );
}
const valid = synthetic.filter((row) => row.split === "valid");

const { devSubsets } = await import("../dist/corpus-subsets.js");
const testSubsets = new Set([
  "bipia_injected_email",
  "bipia_clean_email",
  "cyberseceval_indirect",
  "security_doc_hard_negative",
]);

let dev = [];
if (dataDir) {
  const all = readJsonl(resolve(dataDir, "injection.jsonl"));
  dev = all.filter((row) => devSubsets.has(row.subset));
  if (dev.some((row) => testSubsets.has(row.subset)))
    throw new Error("[injection training] a test row reached training");
  // Windows of dev documents. Benign documents: every window is benign. Injected documents: the
  // windows around segments the heuristic rules flag (the rules were written on these dev
  // subsets), or the whole text when it is short; other windows of injected documents are left
  // out (their label is unknown).
  const heuristic = heuristicScanner();
  let positives = 0;
  let negatives = 0;
  for (const row of dev) {
    if (row.label === "benign") {
      negatives += addWindows(row.text, () => 0)[0];
      continue;
    }
    const findings = heuristic.scan(row.text, { source: "document" }).findings;
    if (findings.length === 0) {
      if (row.text.length <= 600) {
        train.push({ text: row.text, y: 1, weight: 1 });
        positives++;
      }
      continue;
    }
    const hot = (start, end) =>
      findings.some((finding) => finding.start < end && finding.end > start);
    positives += addWindows(row.text, (start, end) => (hot(start, end) ? 1 : undefined))[1];
  }
  console.log(
    `[injection training] dev subsets from ${dataDir}: ${dev.length} documents, ${positives} injection windows, ${negatives} benign windows`,
  );
}

const dimensions = 1 << bits;
console.log(
  `[injection training] ${train.length} training rows, ${dimensions} buckets, ${epochs} epochs, seed ${seed}`,
);
const vectors = train.map((row) => {
  const pairs = featureVector(row.text, dimensions);
  return {
    indices: Int32Array.from(pairs.map((pair) => pair[0])),
    values: Float32Array.from(pairs.map((pair) => pair[1])),
    y: row.y,
    weight: row.weight,
  };
});

// Logistic regression by AdaGrad with L2, shuffled each epoch by the seeded generator.
const w = new Float64Array(dimensions);
const g2 = new Float64Array(dimensions).fill(1e-8);
let bias = 0;
let biasG2 = 1e-8;
const rate = 0.2;
const order = vectors.map((_, index) => index);
for (let epoch = 0; epoch < epochs; epoch++) {
  for (let index = order.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [order[index], order[other]] = [order[other], order[index]];
  }
  let loss = 0;
  for (const at of order) {
    const { indices, values, y, weight } = vectors[at];
    let z = bias;
    for (let k = 0; k < indices.length; k++) z += w[indices[k]] * values[k];
    const p = 1 / (1 + Math.exp(-z));
    loss += -weight * (y ? Math.log(p + 1e-12) : Math.log(1 - p + 1e-12));
    const error = weight * (p - y);
    for (let k = 0; k < indices.length; k++) {
      const j = indices[k];
      const gradient = error * values[k] + l2 * w[j];
      g2[j] += gradient * gradient;
      w[j] -= (rate * gradient) / Math.sqrt(g2[j]);
    }
    biasG2 += error * error;
    bias -= (rate * error) / Math.sqrt(biasG2);
  }
  console.log(
    `[injection training] epoch ${epoch + 1}: mean loss ${(loss / order.length).toFixed(4)}`,
  );
}

// Quantise to int8.
let largest = 0;
for (const value of w) largest = Math.max(largest, Math.abs(value));
const scale = largest / 127 || 1;
const quantised = new Int8Array(dimensions);
for (let index = 0; index < dimensions; index++)
  quantised[index] = Math.max(-127, Math.min(127, Math.round(w[index] / scale)));

function build(thresholds) {
  return encodeDetectorWeights({
    version: 1,
    bits,
    window,
    scale,
    bias,
    thresholds,
    weights: quantised,
  });
}

// Thresholds: on the dev subsets when given (document level, as the scanner scores), else on the
// synthetic validation rows. Suspicious: the lowest threshold with at most 2% false positives;
// injection: at most 0.5%.
const provisional = learnedScanner({ weights: build({ suspicious: 0.5, injection: 0.9 }) });
// Both the synthetic validation rows (never trained on) and, when given, the dev documents.
const calibration = [
  ...valid.map((row) => ({ text: row.text, y: row.label === "injection" ? 1 : 0 })),
  ...dev.map((row) => ({ text: row.text, y: row.label === "injection" ? 1 : 0 })),
];
const scored = calibration.map((row) => ({ p: provisional.probability(row.text), y: row.y }));
const benignScores = scored
  .filter((row) => row.y === 0)
  .map((row) => row.p)
  .sort((a, b) => b - a);
const at = (share) =>
  benignScores[Math.min(benignScores.length - 1, Math.floor(share * benignScores.length))] ?? 0.5;
const clamp = (value) => Math.min(0.98, Math.max(0.05, value + 1e-6));
const suspicious = clamp(Math.max(at(0.02), 0.3));
const injection = Math.max(suspicious, clamp(Math.max(at(0.005), 0.6)));
const bytes = build({ suspicious, injection });
decodeDetectorWeights(bytes, out);
writeFileSync(out, bytes);

const final = learnedScanner({ weights: bytes });
const report = (rows, label) => {
  const flagged = rows.filter((row) => final.probability(row.text) >= suspicious);
  const positives = rows.filter((row) => row.y === 1);
  const negatives = rows.filter((row) => row.y === 0);
  const detect = flagged.filter((row) => row.y === 1).length / Math.max(1, positives.length);
  const falsePositives =
    flagged.filter((row) => row.y === 0).length / Math.max(1, negatives.length);
  console.log(
    `[injection training] ${label}: detection ${(100 * detect).toFixed(1)}% of ${positives.length}, false positives ${(100 * falsePositives).toFixed(1)}% of ${negatives.length}`,
  );
};
report(
  valid.map((row) => ({ text: row.text, y: row.label === "injection" ? 1 : 0 })),
  "synthetic validation",
);
if (dataDir)
  report(
    dev.map((row) => ({ text: row.text, y: row.label === "injection" ? 1 : 0 })),
    "dev documents (seen in training)",
  );
console.log(
  `[injection training] wrote ${out} (${bytes.length} bytes; thresholds suspicious ${suspicious.toFixed(3)}, injection ${injection.toFixed(3)})`,
);
