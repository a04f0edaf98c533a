import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callOf } from "./__fixtures__/calls.js";
import { loadPolicy } from "./load-policy.js";
import { normalizeValue } from "./normalize-value.js";
import { policy } from "./policy.js";
import { argDomainNotIn, argGt, argIn, argLt, argMatches, argNotIn } from "./predicate.js";
import { allow, ask, deny } from "./rule.js";

// Ways an attacker re-writes a value so a list no longer sees it.
const fullWidth = (text: string) =>
  text.replace(/[\x21-\x7e]/g, (char) => String.fromCharCode(char.charCodeAt(0) + 0xfee0));
const invisibles = ["\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad"];
const spaces = [" ", "  ", "\t", "\u00a0", "\u3000", "\n"];

// Characters normalisation has to get right: ASCII, spaces of every kind, full-width and other
// compatibility forms, invisible characters, combining accents, Cyrillic, lone surrogates.
const interesting = fc.oneof(
  fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }),
  fc.constantFrom(
    " ",
    "\t",
    "\n",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\u00ad",
  ),
  fc.constantFrom("Ａ", "ｚ", "０", "＠", "ﬁ", "Ⅻ", "ℌ", "①", "\u0301", "\u0308", "é", "ß", "İ"),
  fc.constantFrom("а", "е", "о", "Д", "ж", "ο", "Ω", "\ud800", "\udc00", "😀"),
);
const word = fc.stringMatching(/^[a-z][a-z0-9_-]{2,14}$/);
const variant = (value: string) =>
  fc
    .record({
      upper: fc.array(fc.boolean(), { minLength: value.length, maxLength: value.length }),
      wide: fc.boolean(),
      zeroWidth: fc.option(
        fc.tuple(
          fc.integer({ min: 1, max: Math.max(1, value.length - 1) }),
          fc.constantFrom(...invisibles),
        ),
      ),
      before: fc.constantFrom("", ...spaces),
      after: fc.constantFrom("", ...spaces),
      wrap: fc.integer({ min: 0, max: 3 }),
    })
    .map(({ upper, wide, zeroWidth, before, after, wrap }) => {
      let text = [...value]
        .map((char, index) => (upper[index] ? char.toUpperCase() : char))
        .join("");
      if (wide) text = fullWidth(text);
      if (zeroWidth) {
        const [at, mark] = zeroWidth;
        const chars = [...text];
        chars.splice(Math.min(at, chars.length), 0, mark);
        text = chars.join("");
      }
      let out: unknown = `${before}${text}${after}`;
      for (let depth = 0; depth < wrap; depth += 1) out = [out];
      return out;
    });

describe("policy values are compared normalised (no list bypass)", () => {
  it("a deny list catches every re-written form of a listed value", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(word, { minLength: 1, maxLength: 5 }),
        fc.nat(),
        fc.context(),
        (listed, pick, context) => {
          const target = listed[pick % listed.length]!;
          const gate = policy([deny("change_plan", { when: argIn("plan", listed) })]);
          fc.assert(
            fc.property(variant(target), (value) => {
              context.log(JSON.stringify(value));
              const decision = gate.check(callOf("change_plan", { plan: value }));
              return decision.type === "deny";
            }),
            { numRuns: 20 },
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it("an allow list admits no value outside it, however it is written or wrapped", () => {
    fc.assert(
      fc.property(fc.uniqueArray(word, { minLength: 2, maxLength: 5 }), fc.nat(), (words, pick) => {
        const [outsider, ...listed] = [
          words[pick % words.length]!,
          ...words.filter((_, i) => i !== pick % words.length),
        ];
        const gate = policy([allow("change_plan", { when: argIn("plan", listed) })], {
          default: "deny",
        });
        // An outsider mixed into an array with listed values must not ride along.
        for (const value of [
          outsider,
          [outsider],
          [listed[0]!, outsider],
          [[listed[0]!], [outsider]],
        ]) {
          if (gate.check(callOf("change_plan", { plan: value })).type !== "deny") return false;
        }
        return gate.check(callOf("change_plan", { plan: [listed[0]!] })).type === "allow";
      }),
      { numRuns: 200 },
    );
  });

  it("argNotIn agrees with argIn on every variant", () => {
    fc.assert(
      fc.property(word, fc.context(), (target, context) => {
        const notIn = argNotIn("currency", [target]);
        return (
          fc.assert(
            fc.property(variant(target), (value) => {
              context.log(JSON.stringify(value));
              return notIn.test({ currency: value }, callOf("t", {})) === false;
            }),
            { numRuns: 10 },
          ) === undefined
        );
      }),
      { numRuns: 50 },
    );
  });

  it("normalisation is idempotent and folds the forms above", () => {
    fc.assert(
      fc.property(fc.string({ unit: interesting, maxLength: 40 }), (text) => {
        const once = normalizeValue(text);
        return normalizeValue(once) === once;
      }),
      { numRuns: 200 },
    );
    // The ASCII fast paths agree with the full folding.
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-ascii", maxLength: 40 }), (text) => {
        const reference = text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim();
        return normalizeValue(text) === reference && normalizeValue(`\u00a0${text}`) === reference;
      }),
      { numRuns: 300 },
    );
    expect(normalizeValue("ＥＮＴＥＲＰＲＩＳＥ\u3000")).toBe("enterprise");
    expect(normalizeValue("Enter\u200bprise ")).toBe("enterprise");
    expect(normalizeValue("  Café  Noir ")).toBe("cafe noir");
  });

  it("argMatches cannot decide when the raw and folded text disagree, so deny applies and allow does not", () => {
    const denySql = policy([deny("run_sql", { when: argMatches("query", /\bdrop\b/i) })]);
    for (const query of ["ＤＲＯＰ table x", "dr\u200bop table x", ["select 1", "drop table x"]])
      expect(denySql.check(callOf("run_sql", { query })).type).toBe("deny");
    expect(denySql.check(callOf("run_sql", { query: "select 1" })).type).toBe("allow");
    const allowPlan = policy([allow("set", { when: argMatches("plan", /^basic$/) })], {
      default: "deny",
    });
    expect(allowPlan.check(callOf("set", { plan: "basic" })).type).toBe("allow");
    for (const plan of ["basic ", "basic\u200b", ["basic", "enterprise"]])
      expect(allowPlan.check(callOf("set", { plan })).type).toBe("deny");
  });
});

describe("Cyrillic and Greek look-alikes", () => {
  const latinToLookAlike: Record<string, string[]> = {
    a: ["а", "α"],
    e: ["е"],
    o: ["о", "ο"],
    p: ["р", "ρ"],
    c: ["с"],
    x: ["х"],
    i: ["і"],
    s: ["ѕ"],
  };
  const spoofable = fc
    .stringMatching(/^[a-z]{3,12}$/)
    .filter((value) => [...value].some((char) => char in latinToLookAlike));
  const spoof = (value: string) =>
    fc
      .array(fc.nat(), { minLength: value.length, maxLength: value.length })
      .map((picks) => {
        const chars = [...value];
        // Swap every other spoofable letter (at least one), keeping some Latin letters.
        let swapped = 0;
        for (let index = 0; index < chars.length; index += 1) {
          const options = latinToLookAlike[chars[index]!];
          if (options && (swapped === 0 || picks[index]! % 2 === 0)) {
            chars[index] = options[picks[index]! % options.length]!;
            swapped += 1;
          }
        }
        return chars.join("");
      })
      .filter((text) => text !== value && /[a-z]/.test(text));

  it("a deny list refuses a listed word spelled with look-alikes; an allow list does not admit it", () => {
    fc.assert(
      fc.property(
        spoofable,
        fc.context(),
        (word, context) =>
          fc.assert(
            fc.property(spoof(word), (value) => {
              context.log(value);
              const denyGate = policy([deny("change_plan", { when: argIn("plan", [word]) })]);
              const allowGate = policy([allow("change_plan", { when: argIn("plan", [word]) })], {
                default: "deny",
              });
              return (
                denyGate.check(callOf("change_plan", { plan: value })).type === "deny" &&
                allowGate.check(callOf("change_plan", { plan: value })).type === "deny" &&
                allowGate.check(callOf("change_plan", { plan: word })).type === "allow"
              );
            }),
            { numRuns: 10 },
          ) === undefined,
      ),
      { numRuns: 60 },
    );
  });

  it("text wholly in another script is left as it is", () => {
    expect(argIn("city", ["москва"]).test({ city: "Москва" }, callOf("t"))).toBe(true);
    expect(argIn("word", ["copy"]).test({ word: "сору" }, callOf("t"))).toBe(false);
    expect(() => argIn("word", ["copy"]).test({ word: "cору" }, callOf("t"))).toThrow(/look-alike/);
    expect(() =>
      policy([deny("run_sql", { when: argMatches("query", /\bdrop\b/i) })]).check(
        callOf("run_sql", { query: "drор table x" }),
      ),
    ).not.toThrow();
    expect(
      policy([deny("run_sql", { when: argMatches("query", /\bdrop\b/i) })]).check(
        callOf("run_sql", { query: "drор table x" }),
      ).type,
    ).toBe("deny");
  });
});

describe("numeric predicates fail closed on non-finite values", () => {
  it("no NaN or infinity passes a numeric rule, whatever the bound", () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }),
        fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
        (bound, value) => {
          const allowSmall = policy([allow("refund", { when: argLt("amount", bound) })], {
            default: "deny",
          });
          const askBig = policy([ask("refund", { when: argGt("amount", bound) })]);
          return (
            allowSmall.check(callOf("refund", { amount: value })).type === "deny" &&
            askBig.check(callOf("refund", { amount: value })).type === "ask"
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

const host = fc
  .tuple(
    fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/),
    fc.constantFrom("com", "example", "io", "net"),
  )
  .map(([name, tld]) => `${name}.${tld}`)
  .filter((name) => name !== "acme-shop.com");
const local = fc.stringMatching(/^[a-z][a-z0-9._+-]{0,10}$/);

describe("domain checks see routed and quoted addresses", () => {
  const gate = policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })]);
  const verdict = (to: unknown) => gate.check(callOf("send_email", { to })).type;

  it("the percent hack, bang paths and source routes through another host are denied", () => {
    fc.assert(
      fc.property(local, host, (user, other) => {
        return (
          verdict(`${user}%${other}@acme-shop.com`) === "deny" &&
          verdict(`${user}%${other}%acme-shop.com@acme-shop.com`) === "deny" &&
          verdict(`${other}!${user}@acme-shop.com`) === "deny" &&
          verdict(`@${other}:${user}@acme-shop.com`) === "deny" &&
          verdict(`Ann <${user}%${other}@acme-shop.com>`) === "deny" &&
          verdict([`${user}@acme-shop.com`, `${user}%${other}@acme-shop.com`]) === "deny"
        );
      }),
      { numRuns: 300 },
    );
  });

  it("quoted local parts: plain ones are read, ones that could route elsewhere are denied", () => {
    fc.assert(
      fc.property(local, host, (user, other) => {
        return (
          verdict(`"${user} lee"@acme-shop.com`) === "allow" &&
          verdict(`"${user}@${other}"@acme-shop.com`) === "deny" &&
          verdict(`"${user}%${other}"@acme-shop.com`) === "deny" &&
          verdict(`"${user}\\"@${other}"@acme-shop.com`) === "deny" &&
          verdict(`"${user}@acme-shop.com" <${user}@${other}>`) === "deny" &&
          verdict(`${user}@${other}`) === "deny"
        );
      }),
      { numRuns: 300 },
    );
  });

  it("inside addresses still pass", () => {
    fc.assert(
      fc.property(local, (user) => {
        return (
          verdict(`${user}@acme-shop.com`) === "allow" &&
          verdict(`${user}%acme-shop.com@acme-shop.com`) === "allow" &&
          verdict(`Ann <${user}@ACME-SHOP.COM>`) === "allow"
        );
      }),
      { numRuns: 200 },
    );
  });
});

describe("policy documents with duplicate keys are refused", () => {
  const base = (rule: string) => `{"version":1,"default":"allow","rules":[${rule}]}`;

  it("names the duplicated key and where it is", () => {
    expect(() =>
      loadPolicy(base('{"effect":"deny","tool":"send_email","effect":"allow"}')),
    ).toThrow(/rules\[0\]\.effect: duplicate key "effect"/);
    expect(() => loadPolicy('{"version":1,"version":1,"default":"allow","rules":[]}')).toThrow(
      /version: duplicate key/,
    );
    // An escaped spelling of the same key is the same key.
    expect(() => loadPolicy(base('{"effect":"deny","tool":"x","\\u0065ffect":"allow"}'))).toThrow(
      /duplicate key "effect"/,
    );
    expect(() =>
      loadPolicy(base('{"effect":"deny","tool":"x","when":{"arg":"a","gt":1,"gt":1e9}}')),
    ).toThrow(/rules\[0\]\.when\.gt: duplicate key/);
  });

  it("any generated document with one key repeated is refused; without, it loads", () => {
    const keys = ["effect", "tool", "reason", "id"] as const;
    fc.assert(
      fc.property(fc.constantFrom(...keys), fc.boolean(), (key, duplicate) => {
        const fields: Record<string, string> = {
          effect: '"deny"',
          tool: '"send_*"',
          reason: '"no_mail"',
          id: '"r1"',
        };
        const parts = Object.entries(fields).map(([name, value]) => `"${name}":${value}`);
        if (duplicate) parts.push(`"${key}":${key === "effect" ? '"allow"' : fields[key]}`);
        const text = base(`{${parts.join(",")}}`);
        try {
          loadPolicy(text);
          return !duplicate;
        } catch (error) {
          return duplicate && /duplicate key/.test((error as Error).message);
        }
      }),
      { numRuns: 50 },
    );
  });
});
