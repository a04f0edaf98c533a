import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadPiiRows, PII_PATH, scorePii } from "../bench/pii-data.mjs";
import { redact } from "./redact.js";

// The same scoring as `pnpm bench`, held to the thresholds. Needs the shared corpus
// at ../shared/data/pii.jsonl from the repository root.
describe.skipIf(!existsSync(PII_PATH))("accuracy on the shared PII corpus", () => {
  const score = scorePii(loadPiiRows(), (text) => redact(text).findings);

  it.each([
    ["EMAIL", 0.98],
    ["CREDIT_CARD", 0.98],
    ["IBAN", 0.98],
    ["US_SSN", 0.98],
    ["IP_ADDRESS", 0.98],
    ["SECRET", 0.95],
    ["PHONE", 0.95],
  ])("%s recall is at least %d", (type, threshold) => {
    const entry = score.perType.get(type);
    expect(entry?.gold).toBeGreaterThan(0);
    expect(entry?.recall, JSON.stringify(entry?.missed)).toBeGreaterThanOrEqual(threshold);
  });

  it("flags no negative row for the type it imitates (bad Luhn, bad IBAN check, invalid SSN, …)", () => {
    const pattern = score.flaggedNegatives.filter((flagged) => flagged.type !== "SECRET");
    expect(pattern).toEqual([]);
  });

  it("flags only values under secret-like names among the secret negatives", () => {
    // detect-secrets skips these by length or by a "fake" allow-list; we redact any value
    // assigned to a password-, token- or key-like name, on purpose.
    const secrets = score.flaggedNegatives.filter((flagged) => flagged.type === "SECRET");
    for (const flagged of secrets) expect(flagged.text).toMatch(/key|token|password/i);
    expect(secrets.length).toBeLessThanOrEqual(7);
  });
});

it("the corpus loader says where it looked when the file is missing", () => {
  expect(() => loadPiiRows("/nonexistent/pii.jsonl")).toThrow(
    /\[redact\] the PII corpus is missing: expected \/nonexistent\/pii.jsonl/,
  );
});
