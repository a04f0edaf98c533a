// Loads the shared PII corpus and scores a redactor on it. Used by bench/accuracy.mjs and by
// src/accuracy.test.ts, so the figures in the README and the test thresholds agree.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root: packages/redact/bench → ../../.. */
export const REPO_ROOT = resolve(here, "../../..");

/** Where the corpus lives: `../shared/data/pii.jsonl` from the repository root. */
export const PII_PATH = resolve(REPO_ROOT, "../shared/data/pii.jsonl");

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

/** Reads the corpus, or throws an error that says where it was looked for. */
export function loadPiiRows(path = PII_PATH) {
  if (!existsSync(path)) {
    throw new Error(
      `[redact] the PII corpus is missing: expected ${path} (../shared/data/pii.jsonl from the repository root). Put the shared data folder beside the repository and run again.`,
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
    if (row.entities.length === 0) {
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
  return { perType, flaggedNegatives, negatives, rows: rows.length };
}
