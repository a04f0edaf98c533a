import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nameSkeleton, vetNames } from "../src/internal/index.js";

const asTool = { kind: "tool", gateName: (name: string) => name };

/** Look-alikes an attacker would pick for ASCII letters (Cyrillic, Greek, math, full-width...). */
const lookAlikes: Record<string, string[]> = {
  a: ["\u0430", "\u0251", "\uff41"],
  c: ["\u0441", "\u217d"],
  e: ["\u0435", "\uff45"],
  i: ["\u0456", "\u2170", "\u0131"],
  l: ["1", "I", "\u04cf", "\u217c"],
  o: ["\u043e", "\u03bf", "0", "\u2134"],
  p: ["\u0440", "\u03c1"],
  s: ["\u0455", "\uff53"],
  x: ["\u0445", "\u00d7"],
  y: ["\u0443"],
  m: ["rn"],
  _: ["\uff3f"],
};
const invisibles = [
  "\u200b",
  "\u200c",
  "\u200d",
  "\u2060",
  "\ufeff",
  "\u202e",
  "\u00ad",
  "\ufe0f",
  " ",
];

const protectedName = fc
  .array(fc.constantFrom(..."acdeilmnoprstxy_"), { minLength: 4, maxLength: 16 })
  .map((letters) => letters.join(""))
  .filter((name) => /^[a-z]/.test(name));

/** One of the attacker's tricks applied to a name: a look-alike, case, an invisible character, full width. */
const disguised = protectedName.chain((name) =>
  fc
    .record({
      trick: fc.constantFrom("look_alike", "case", "invisible", "full_width"),
      at: fc.nat({ max: name.length - 1 }),
      pick: fc.nat(),
    })
    .map(({ trick, at, pick }) => {
      const letter = name[at]!;
      let disguise = name;
      if (trick === "look_alike") {
        const choices = lookAlikes[letter];
        if (choices)
          disguise = name.slice(0, at) + choices[pick % choices.length] + name.slice(at + 1);
      } else if (trick === "case")
        disguise = name.slice(0, at) + letter.toUpperCase() + name.slice(at + 1);
      else if (trick === "invisible")
        disguise = name.slice(0, at) + invisibles[pick % invisibles.length] + name.slice(at);
      else
        disguise =
          name.slice(0, at) +
          String.fromCodePoint(letter.codePointAt(0)! + 0xfee0) +
          name.slice(at + 1);
      return { name, disguise };
    })
    .filter(({ name, disguise }) => name !== disguise),
);

describe("vetNames", () => {
  it("refuses every disguise of a protected name (look-alikes, case, invisible characters, full width), alone or beside the real one", () => {
    fc.assert(
      fc.property(disguised, ({ name, disguise }) => {
        const alone = vetNames([disguise], { ...asTool, protectedPatterns: [name] });
        expect(alone.get(0)?.reason).toMatch(/^(invalid_name|confusable_with_policy)$/);
        const beside = vetNames([name, disguise], { ...asTool, protectedPatterns: [name] });
        // The real one stays (the rule names it exactly); the disguise goes.
        expect(beside.has(0)).toBe(false);
        expect(beside.get(1)?.reason).toMatch(/^(invalid_name|confusable_name)$/);
      }),
      { numRuns: 2_000 },
    );
  });

  it("refuses a disguise that matches a protected glob's look-alike, and never the names the glob matches", () => {
    const refusals = vetNames(["send_sms", "s\u0435nd_fax", "SEND_MAIL", "lookup_order"], {
      ...asTool,
      protectedPatterns: ["send_*"],
    });
    expect(refusals.has(0)).toBe(false);
    expect(refusals.get(1)?.reason).toBe("confusable_with_policy");
    expect(refusals.get(2)?.reason).toBe("confusable_with_policy");
    expect(refusals.has(3)).toBe(false);
  });

  it("accepts distinct plain names that do not look alike (no false refusals among ordinary tool names)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(protectedName, { minLength: 1, maxLength: 12 }), (names) => {
        const keys = new Set(
          names.map((name) =>
            nameSkeleton(nameSkeleton(name.toLowerCase()).toLowerCase()).replaceAll("i", "l"),
          ),
        );
        fc.pre(keys.size === names.length);
        expect(vetNames(names, { ...asTool, protectedPatterns: names }).size).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses duplicates, pairs of look-alikes nobody protects, reserved and malformed names, with messages that say why", () => {
    const refusals = vetNames(
      ["dup", "dup", "get_balance", "get_baIance", 42, "", "x".repeat(300), "prompt:x"],
      {
        ...asTool,
        protectedPatterns: [],
        reserved: (name) => (name.startsWith("prompt:") ? "reserved for prompts" : undefined),
      },
    );
    expect(
      [...refusals.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, refusal]) => [index, refusal.reason]),
    ).toEqual([
      [0, "duplicate_name"],
      [1, "duplicate_name"],
      [2, "confusable_name"],
      [3, "confusable_name"],
      [4, "invalid_name"],
      [5, "invalid_name"],
      [6, "invalid_name"],
      [7, "reserved_name"],
    ]);
    expect(refusals.get(0)?.message).toBe(
      'tool "dup" is refused: the server lists it 2 times, so which definition a call reaches is the server\'s choice',
    );
    expect(refusals.get(2)?.message).toContain('it looks like "get_baIance"');
  });

  it("computes the UTS #39 skeleton", () => {
    expect(nameSkeleton("send_em\u0430il")).toBe(nameSkeleton("send_email"));
    expect(nameSkeleton("m")).toBe(nameSkeleton("rn"));
    expect(nameSkeleton("send_email")).not.toBe(nameSkeleton("send_emails"));
  });
});

describe("names an outside attacker found", () => {
  it("withholds a blank Braille cell and combining marks, and letters the confusables table does not list", () => {
    const names = [
      "send_email\u2800",
      "send_email\u0332",
      "se\u0331nd_email",
      "send_ema\uA7FEl",
      "send_emai\u1E37",
      "send_emai\u0142",
      "\uA7A9end_email",
      "lookup_order",
    ];
    const refused = vetNames(names, {
      kind: "tool",
      protectedPatterns: ["send_email"],
      gateName: (name) => name,
    });
    expect([...refused.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(refused.has(7)).toBe(false);
  });
});
