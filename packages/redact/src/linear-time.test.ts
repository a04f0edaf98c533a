import { describe, expect, it } from "vitest";
import { createRedactor } from "./create-redactor.js";
import { redact } from "./redact.js";

// Adversarial inputs for each detector: long runs of what its candidates are made of, and
// near misses that make a regex work hard before it fails. Each is run at n and 4n; a
// detector with catastrophic backtracking or a quadratic scan shows a ratio of 16 or far
// more, a linear one about 4. The bound of 10 is generous so the test is not flaky; each
// time is the best of three runs so a GC pause does not count.
const N = 256 * 1024;

const ADVERSARIAL: Record<string, (n: number) => string> = {
  digits: (n) => "1".repeat(n),
  "spaced digits": (n) => "1 ".repeat(n / 2),
  "dashed digits": (n) => "12-".repeat(n / 3),
  "at signs": (n) => "@".repeat(n),
  "local parts": (n) => "a@".repeat(n / 2),
  "dotted domains": (n) => `a@${"b.".repeat(n / 2)}`,
  colons: (n) => ":".repeat(n),
  "hex and colons": (n) => "a:".repeat(n / 2),
  "dotted octets": (n) => "1.".repeat(n / 2),
  "near-miss tokens": (n) => "ghp_abc ".repeat(n / 8),
  "long token": (n) => `ghp_${"a".repeat(n)}`,
  "jwt-like": (n) => `eyJ${"a".repeat(n / 2)}.eyJ${"b".repeat(n / 2)}`,
  "password keys": (n) => "password=".repeat(n / 9),
  "password quotes": (n) => `password="${"a".repeat(n)}`,
  "pem headers": (n) => "-----BEGIN ".repeat(n / 11),
  "iban-like": (n) => "GB82 ".repeat(n / 5),
  "phone-like": (n) => "(12) ".repeat(n / 5),
  "url authority": (n) => `https://${"a:".repeat(n / 2)}`,
};

// The context detectors read every capital, year or street word with its neighbours: linear,
// but a few microseconds a character on text made only of them, so these run at n/16.
const ADVERSARIAL_CONTEXT: Record<string, (n: number) => string> = {
  "street words": (n) => "Calle Mayor ".repeat(n / 12),
  "capitalised runs": (n) => "Ab Cd ".repeat(n / 6),
  "spelled at": (n) => "a at b dot ".repeat(n / 11),
  "han runs": (n) => "王".repeat(n),
  "birth cues and years": (n) => "born 1984 ".repeat(n / 10),
  "ssn lists": (n) => "111-22-3333, ".repeat(n / 13),
};

/** Milliseconds of CPU this process spent in `work` (other processes' load does not count). */
function cpuTime(work: () => void): number {
  const started = process.cpuUsage();
  work();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
}

/**
 * The best CPU time of each of two jobs, measured in turns (small, large, small, …). CPU time
 * rather than wall time, and in turns, so a busy shared machine (CI runs every package's
 * tests at once) does not make a linear scan look quadratic.
 */
function bestOfEach(runs: number, small: () => void, large: () => void): [number, number] {
  let bestSmall = Number.POSITIVE_INFINITY;
  let bestLarge = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    bestSmall = Math.min(bestSmall, cpuTime(small));
    bestLarge = Math.min(bestLarge, cpuTime(large));
  }
  return [Math.max(bestSmall, 1), bestLarge];
}

describe("adversarial inputs run in linear time", () => {
  it.each(Object.entries(ADVERSARIAL))("%s", (_name, make) => {
    const small = make(N);
    const large = make(4 * N);
    redact(small); // warm up
    const [smallTime, largeTime] = bestOfEach(
      5,
      () => redact(small),
      () => redact(large),
    );
    expect(largeTime / smallTime).toBeLessThan(10);
  });

  it.each(Object.entries(ADVERSARIAL_CONTEXT))("%s (context detectors)", (_name, make) => {
    const small = make(N / 16);
    const large = make(N / 4);
    redact(small); // warm up
    redact(large);
    const [smallTime, largeTime] = bestOfEach(
      5,
      () => redact(small),
      () => redact(large),
    );
    expect(largeTime / smallTime).toBeLessThan(10);
  });

  it("redactDeep on a wide object of adversarial strings", () => {
    const redactor = createRedactor();
    const make = (n: number) =>
      Object.fromEntries(
        Array.from({ length: n / 1024 }, (_, index) => [`k${index}`, "1 @:".repeat(256)]),
      );
    const small = make(N);
    const large = make(4 * N);
    redactor(small);
    const [smallTime, largeTime] = bestOfEach(
      5,
      () => redactor(small),
      () => redactor(large),
    );
    expect(largeTime / smallTime).toBeLessThan(10);
  });

  it("redacts 1 MB of mixed adversarial text", () => {
    const text = Object.values(ADVERSARIAL)
      .map((make) => make(64 * 1024))
      .join("\n");
    expect(text.length).toBeGreaterThan(1_000_000);
    expect(typeof redact(text).text).toBe("string");
  });
});
