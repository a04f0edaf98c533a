import { describe, expect, it } from "vitest";
import { DEFAULT_TYPES, PATTERN_TYPES } from "./builtin-detectors.js";
import { createRedactor } from "./create-redactor.js";
import { LANGUAGES } from "./detector.js";
import { redact } from "./redact.js";
import { RedactOptionsError } from "./redact-error.js";
import { createRedactionStream } from "./redaction-stream.js";
import { createVault } from "./vault.js";

describe("confidence scores and the threshold", () => {
  it("gives every finding a score from 0 to 1: checksums near 1, a name by its shape lower", () => {
    const text = "Adaeze Nwosu paid with 4111 1111 1111 1111; write to ana@firma.example";
    const { findings } = redact(text);
    const byType = new Map(findings.map((finding) => [finding.type, finding.score]));
    expect(byType.get("CREDIT_CARD")).toBe(1);
    expect(byType.get("EMAIL")).toBe(1);
    const person = byType.get("PERSON")!;
    expect(person).toBeGreaterThanOrEqual(0.5);
    expect(person).toBeLessThan(0.9);
  });

  it("drops findings below the threshold and keeps those above it", () => {
    const text = "Adaeze Nwosu paid with 4111 1111 1111 1111";
    expect(redact(text).text).toBe("[PERSON] paid with [CREDIT_CARD]");
    expect(redact(text, { threshold: 0.9 }).text).toBe("Adaeze Nwosu paid with [CREDIT_CARD]");
    // A name after a greeting is vouched for by its cue and stays at a high threshold.
    expect(redact("Hi Adaeze, your card 4111 1111 1111 1111", { threshold: 0.9 }).text).toBe(
      "Hi [PERSON], your card [CREDIT_CARD]",
    );
  });

  it("a lower threshold redacts more: a bare nine-digit run with no SSN label", () => {
    expect(redact("ref 078051120").text).toBe("ref 078051120");
    expect(redact("ref 078051120", { threshold: 0.2 }).text).toBe("ref [US_SSN]");
  });

  it("threshold 0 and 1 are allowed; outside [0, 1] is an error at construction", () => {
    expect(redact("a@b.io", { threshold: 0 }).text).toBe("[EMAIL]");
    expect(redact("a@b.io", { threshold: 1 }).text).toBe("[EMAIL]");
    for (const threshold of [-0.1, 1.5, Number.NaN, "0.5", null]) {
      expect(() => createRedactor({ threshold } as never)).toThrow(RedactOptionsError);
      expect(() => createRedactor({ threshold } as never)).toThrow(
        /\[redact\] createRedactor: threshold must be a number from 0 to 1/,
      );
    }
    expect(() => createRedactionStream({ threshold: 2 })).toThrow(/threshold must be a number/);
    expect(() => createVault({ threshold: -1 })).toThrow(/threshold must be a number/);
  });
});

describe("the languages option", () => {
  it("runs only the rules of the languages named; rules of no language always run", () => {
    const text = "寄到广东省广州市天河区体育西路191号, mail ana@firma.example";
    expect(redact(text).text).toBe("寄到[ADDRESS], mail [EMAIL]");
    expect(redact(text, { languages: ["en", "de"] }).text).toBe(
      "寄到广东省广州市天河区体育西路191号, mail [EMAIL]",
    );
    expect(redact(text, { languages: ["zh"] }).text).toBe("寄到[ADDRESS], mail [EMAIL]");
    const spanish = "Calle de Serrano 41, 28001 Madrid";
    expect(redact(spanish, { languages: ["es"] }).text).toBe("[ADDRESS]");
    expect(redact(spanish, { languages: ["de", "it"] }).text).toBe(spanish);
  });

  it("an unknown language or an empty list is an error at construction that lists the known ones", () => {
    expect(() => createRedactor({ languages: ["en", "xx"] } as never)).toThrow(
      /\[redact\] createRedactor: unknown language "xx" in languages; use one of en, de, fr/,
    );
    expect(() => createRedactor({ languages: [] })).toThrow(/non-empty array/);
    expect(() => createRedactor({ languages: "en" } as never)).toThrow(/non-empty array/);
    expect(LANGUAGES).toContain("ja");
  });
});

describe("the types option: pattern types alone", () => {
  it("PATTERN_TYPES leaves names, addresses and birth dates to the caller", () => {
    const text =
      "Hi Adaeze, born 12 March 1984, at 77 Birchwood Crossing, Macon, GA 31201: ana@firma.example";
    expect(redact(text, { types: PATTERN_TYPES }).text).toBe(
      "Hi Adaeze, born 12 March 1984, at 77 Birchwood Crossing, Macon, GA 31201: [EMAIL]",
    );
    expect(redact(text).text).toBe("Hi [PERSON], born [DATE_OF_BIRTH], at [ADDRESS]: [EMAIL]");
    for (const type of PATTERN_TYPES) expect(DEFAULT_TYPES).toContain(type);
  });

  it("an unknown type is an error at construction", () => {
    expect(() => createRedactor({ types: ["EMAIL", "NAME"] } as never)).toThrow(
      /\[redact\] createRedactor: unknown type "NAME" in types/,
    );
  });
});
