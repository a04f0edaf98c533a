// Loads a labelled PII corpus and scores a redactor on it. Used by bench/accuracy.mjs and by
// src/accuracy.test.ts, so the figures in the README and the test thresholds agree.
//
// Two corpora: the one written for this package (corpus/pii-corpus.jsonl, made by
// corpus/generate.mjs from a fixed seed; always there), and the public one (pii.jsonl of the
// shared data folder), read only when LOOPGUARD_PII_CORPUS names it (or `--corpus PATH` on
// the bench): nothing outside the repository is read unless you say so.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root: packages/redact/bench → ../../.. */
export const REPO_ROOT = resolve(here, "../../..");

/** The corpus written for this package: `corpus/pii-corpus.jsonl` (see corpus/README.md). */
export const GENERATED_PATH = resolve(here, "../corpus/pii-corpus.jsonl");

/** The locale corpus: thirteen languages (`corpus/generate-locales.mjs`). */
export const LOCALES_PATH = resolve(here, "../corpus/pii-locales.jsonl");

/** The environment variable that names the public corpus (`../shared/data/pii.jsonl`). */
export const PUBLIC_CORPUS_ENV = "LOOPGUARD_PII_CORPUS";

/** Where the public corpus is, when one was given: `--corpus PATH`, else the environment variable. */
export function publicCorpusPath(argv = process.argv) {
  const flag = argv.indexOf("--corpus");
  if (flag !== -1 && argv[flag + 1] !== undefined) return resolve(argv[flag + 1]);
  const fromEnv = process.env[PUBLIC_CORPUS_ENV];
  return fromEnv === undefined || fromEnv === "" ? undefined : resolve(fromEnv);
}

/**
 * The public corpus's test subset (see the shared data README): measured and reported, never
 * quoted in code or tests, never read while writing a rule. Every other subset is dev.
 */
export const PUBLIC_TEST_SUBSETS = ["presidio_research_synth"];

/** Whether a public-corpus row belongs to a test subset. */
export function isPublicTestRow(row) {
  return PUBLIC_TEST_SUBSETS.includes(row.subset);
}

/** The public corpus split into `{ dev, test }` rows. */
export function splitPublicRows(rows) {
  return {
    dev: rows.filter((row) => !isPublicTestRow(row)),
    test: rows.filter((row) => isPublicTestRow(row)),
  };
}

export const PATTERN_TYPES = [
  "EMAIL",
  "PHONE",
  "CREDIT_CARD",
  "US_SSN",
  "IBAN",
  "IP_ADDRESS",
  "SECRET",
];
export const OTHER_PATTERN_TYPES = ["MAC_ADDRESS", "URL"];
export const NER_TYPES = ["PERSON", "ADDRESS", "LOCATION", "ORGANIZATION"];

/** Reads a corpus (the generated one by default), or throws an error that says where it looked. */
export function loadPiiRows(path = GENERATED_PATH) {
  if (!existsSync(path)) {
    throw new Error(
      `[redact] the PII corpus is missing: expected ${path}. For the generated corpus run \`node corpus/generate.mjs\` in packages/redact; for the public one set ${PUBLIC_CORPUS_ENV} to the path of pii.jsonl.`,
    );
  }
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line));
}

const TEST_LOOKALIKE = [
  [/credit_card/, "CREDIT_CARD"],
  [/iban/, "IBAN"],
  [/snn|ssn/, "US_SSN"],
  [/_ip|ipv6/, "IP_ADDRESS"],
  [/email/, "EMAIL"],
  [/phone/, "PHONE"],
  [/mac_address/, "MAC_ADDRESS"],
  [/url/, "URL"],
  [/crypto/, "CRYPTO_WALLET"],
];

/** The type a negative row was written to look like, or undefined when it says nothing. */
export function lookalikeType(row) {
  if (row.subset.startsWith("detect_secrets") || row.subset.startsWith("llm_guard"))
    return "SECRET";
  const test = row.meta?.test;
  if (typeof test !== "string") return undefined;
  for (const [pattern, type] of TEST_LOOKALIKE) if (pattern.test(test)) return type;
  return undefined;
}

const overlaps = (left, right) => left.start < right.end && right.start < left.end;

/**
 * Scores `findFor(text) -> [{ type, start, end }]` on the rows. A gold entity is found when a
 * finding of the same type overlaps it; a finding is a true positive when it overlaps a gold
 * entity of its type. Returns counts per type and the negative rows flagged for their
 * look-alike type.
 */
export function scorePii(rows, findFor) {
  const perType = new Map();
  const counts = (type) => {
    let entry = perType.get(type);
    if (entry === undefined) {
      entry = {
        type,
        gold: 0,
        found: 0,
        predicted: 0,
        truePositives: 0,
        missed: [],
        falsePositives: [],
      };
      perType.set(type, entry);
    }
    return entry;
  };
  const flaggedNegatives = [];
  const lookalikes = new Map();
  let negatives = 0;
  for (const row of rows) {
    const findings = findFor(row.text);
    for (const entity of row.entities) {
      const entry = counts(entity.type);
      entry.gold++;
      if (findings.some((finding) => finding.type === entity.type && overlaps(finding, entity)))
        entry.found++;
      else entry.missed.push({ id: row.id, value: entity.value });
    }
    for (const finding of findings) {
      const entry = counts(finding.type);
      entry.predicted++;
      if (row.entities.some((entity) => entity.type === finding.type && overlaps(finding, entity)))
        entry.truePositives++;
      else
        entry.falsePositives.push({
          id: row.id,
          value: row.text.slice(finding.start, finding.end),
        });
    }
    // Planted look-alikes (generated corpus): kept when no finding of any type touches them.
    for (const lookalike of row.lookalikes ?? []) {
      let entry = lookalikes.get(lookalike.kind);
      if (entry === undefined) {
        entry = {
          kind: lookalike.kind,
          imitates: lookalike.imitates,
          total: 0,
          kept: 0,
          eaten: [],
        };
        lookalikes.set(lookalike.kind, entry);
      }
      entry.total++;
      const hit = findings.find((finding) => overlaps(finding, lookalike));
      if (hit === undefined) entry.kept++;
      else entry.eaten.push({ id: row.id, value: lookalike.value, as: hit.type });
    }
    if (row.entities.length === 0 && (row.lookalikes ?? []).length === 0) {
      negatives++;
      const type = lookalikeType(row);
      if (type !== undefined && findings.some((finding) => finding.type === type)) {
        flaggedNegatives.push({ id: row.id, type, text: row.text.slice(0, 80) });
      }
    }
  }
  for (const entry of perType.values()) {
    entry.recall = entry.gold === 0 ? undefined : entry.found / entry.gold;
    entry.precision = entry.predicted === 0 ? undefined : entry.truePositives / entry.predicted;
  }
  let lookalikeTotal = 0;
  let lookalikeKept = 0;
  for (const entry of lookalikes.values()) {
    entry.rate = entry.kept / entry.total;
    lookalikeTotal += entry.total;
    lookalikeKept += entry.kept;
  }
  return {
    perType,
    flaggedNegatives,
    negatives,
    rows: rows.length,
    lookalikes,
    lookalikeTotal,
    lookalikeKept,
  };
}
