import fc from "fast-check";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { describe, expect, it } from "vitest";
import { LOCALES_PATH, loadPiiRows } from "../bench/pii-data.mjs";
import { redact } from "./redact.js";

// Properties of the context rules (names, addresses, dates of birth), over generated inputs: what a rule promises for
// every input of its kind, not for a few examples.

const RUNS = { numRuns: 150 };
const pad = (value: number, width: number) => String(value).padStart(width, "0");
const validSsn = fc
  .tuple(
    fc.integer({ min: 1, max: 899 }),
    fc.integer({ min: 1, max: 99 }),
    fc.integer({ min: 1, max: 9999 }),
  )
  .filter(([area]) => area !== 666)
  .map(([area, group, serial]) => `${pad(area, 3)}-${pad(group, 2)}-${pad(serial, 4)}`);

describe("SSNs: one alone is taken, a list is a catalogue unless a word for SSNs opens it", () => {
  it("every valid SSN alone in a sentence is redacted", () => {
    fc.assert(
      fc.property(validSsn, (ssn) => {
        expect(redact(`the form shows ${ssn} at the bottom`).text).not.toContain(ssn);
      }),
      RUNS,
    );
  });

  it("a list of two to six is kept without a cue and redacted whole after one", () => {
    fc.assert(
      fc.property(
        fc.array(validSsn, { minLength: 2, maxLength: 6 }),
        fc.constantFrom(", ", "; ", " and ", " / "),
        (numbers, separator) => {
          const list = numbers.join(separator);
          expect(redact(`part numbers to reorder: ${list}.`).findings).toEqual([]);
          const cued = redact(`SSNs on the claim: ${list}.`).text;
          for (const number of numbers) expect(cued).not.toContain(number);
        },
      ),
      RUNS,
    );
  });
});

describe("versions and addresses", () => {
  it("a dotted run of four groups with a group above 255 is never an IP address or a phone", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 256, max: 99999 }),
        fc.integer({ min: 0, max: 9999 }),
        fc.constantFrom("build", "Chrome", "Orchid Sync", "the kiosk runs", "Version:"),
        (a, b, c, d, before) => {
          const version = `${a}.${b}.${c}.${d}`;
          expect(redact(`${before} ${version} today`).findings).toEqual([]);
        },
      ),
      RUNS,
    );
  });

  it("a public IPv4 address after a common word or an address word stays redacted", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 223 }),
        fc.nat(255),
        fc.nat(255),
        fc.integer({ min: 1, max: 254 }),
        fc.constantFrom("Refund", "Order", "from", "host", "Customer", "the"),
        (a, b, c, d, before) => {
          const address = `${a}.${b}.${c}.${d}`;
          expect(redact(`${before} ${address} blocked`).text).not.toContain(address);
        },
      ),
      RUNS,
    );
  });
});

describe("spelled-out emails and national phone numbers", () => {
  const label = fc.stringMatching(/^[a-z][a-z0-9]{1,10}$/);
  it("name at domain dot tld with a known top-level domain is redacted whole", () => {
    fc.assert(
      fc.property(
        label,
        label,
        fc.constantFrom("com", "de", "fr", "es", "example", "io", "nl", "pl"),
        fc.constantFrom(" at ", " AT ", " (at) ", " [at] "),
        fc.constantFrom(" dot ", " DOT ", " (dot) ", " [dot] "),
        (local, domain, tld, at, dot) => {
          const spelled = `${local}.x${at}${domain}${dot}${tld}`;
          const text = `write to ${spelled} please`;
          const { findings } = redact(text);
          expect(findings.map((finding) => finding.type)).toContain("EMAIL");
          // The whole spelled-out address is one placeholder (a domain such as "to" may also be
          // a word of the sentence, so the check is on the sentence's shape, not on the label).
          expect(redact(text).text).toMatch(/^write to \[EMAIL[^\]]*\] please$/);
        },
      ),
      RUNS,
    );
  });

  it("a valid national number of each country, written nationally, is redacted", () => {
    const prefixes: [string, string][] = [
      ["GB", "7700"],
      ["DE", "151"],
      ["FR", "6"],
      ["NL", "6"],
      ["SE", "70"],
      ["PL", "512"],
      ["JP", "90"],
      ["KR", "10"],
      ["IT", "347"],
      ["ES", "6"],
      ["US", "415"],
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...prefixes),
        fc.stringMatching(/^[0-9]{10}$/),
        ([region, prefix], digits) => {
          for (let length = 7; length <= 11; length++) {
            const number = parsePhoneNumberFromString(
              `${prefix}${digits}`.slice(0, length),
              region as "GB",
            );
            if (number?.isValid() !== true) continue;
            const national = number.formatNational();
            expect(redact(`call ${national} after six`).text).not.toContain(national);
          }
        },
      ),
      RUNS,
    );
  });
});

describe("the threshold", () => {
  const rows = loadPiiRows(LOCALES_PATH);
  it("raising it only removes findings: what a higher threshold keeps, a lower one keeps too", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: rows.length - 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (index, first, second) => {
          const [low, high] = first <= second ? [first, second] : [second, first];
          const text = rows[index]!.text;
          const lower = redact(text, { threshold: low }).findings;
          const higher = redact(text, { threshold: high }).findings;
          for (const finding of higher) {
            expect(finding.score).toBeGreaterThanOrEqual(high);
            expect(
              lower.some((kept) => kept.start <= finding.start && finding.end <= kept.end),
            ).toBe(true);
          }
        },
      ),
      RUNS,
    );
  });
});
