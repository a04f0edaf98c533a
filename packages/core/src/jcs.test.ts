import { createHash } from "node:crypto";
import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { digestOf } from "./digest.js";
import { createAgent, type Gate, type StoredEvent, tool } from "./index.js";
import { canonicalize } from "./jcs.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

// The JSON texts and their canonical forms of RFC 8785 (section 3.2.2's example, the sorting
// example of section 3.2.3) and of the JCS test suite its authors publish beside it.
const vectors: Array<[string, string]> = [
  [
    String.raw`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
    String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
  ],
  [
    String.raw`{"€": "Euro Sign", "1": "One", "\u0080": "Control", "\ud83d\ude02": "Smiley", "ö": "Latin Small Letter O With Diaeresis", "\ufb33": "Hebrew Letter Dalet With Dagesh", "</script>": "Browser Challenge"}`,
    '{"1":"One","</script>":"Browser Challenge","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😂":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  ],
  ['[56, {"d": true, "10": null, "1": [ ]}]', '[56,{"1":[],"10":null,"d":true}]'],
  [
    String.raw`{"1": {"f": {"f": "hi","F": 5} ,"\n": 56.0}, "10": { }, "": "empty", "a": { }, "111": [ {"e": "yes","E": "no" } ], "A": {"b": "123"}}`,
    String.raw`{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{"b":"123"},"a":{}}`,
  ],
  [
    '{"peach": "This sorting order", "péché": "is wrong according to French", "pêche": "but canonicalization MUST", "sin": "ignore locale"}',
    '{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}',
  ],
];

// RFC 8785 appendix B: IEEE 754 doubles (hex) and their canonical text.
const numbers: Array<[string, string]> = [
  ["0000000000000000", "0"],
  ["8000000000000000", "0"],
  ["0000000000000001", "5e-324"],
  ["8000000000000001", "-5e-324"],
  ["7fefffffffffffff", "1.7976931348623157e+308"],
  ["ffefffffffffffff", "-1.7976931348623157e+308"],
  ["4340000000000000", "9007199254740992"],
  ["c340000000000000", "-9007199254740992"],
  ["4430000000000000", "295147905179352830000"],
  ["44b52d02c7e14af5", "9.999999999999997e+22"],
  ["44b52d02c7e14af6", "1e+23"],
  ["44b52d02c7e14af7", "1.0000000000000001e+23"],
  ["444b1ae4d6e2ef4e", "999999999999999700000"],
  ["444b1ae4d6e2ef4f", "999999999999999900000"],
  ["444b1ae4d6e2ef50", "1e+21"],
  ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
  ["3eb0c6f7a0b5ed8d", "0.000001"],
  ["41b3de4355555553", "333333333.3333332"],
  ["41b3de4355555554", "333333333.33333325"],
  ["41b3de4355555555", "333333333.3333333"],
  ["41b3de4355555556", "333333333.3333334"],
  ["41b3de4355555557", "333333333.33333343"],
  ["becbf647612f3696", "-0.0000033333333333333333"],
  ["43143ff3c1cb0959", "1424953923781206.2"],
];

/** The `canonicalize` package's algorithm (Apache-2.0), the oracle for the property below. */
function reference(object: unknown): string {
  if (typeof object === "number" && !Number.isFinite(object)) throw new Error("not finite");
  if (object === null || typeof object !== "object") return JSON.stringify(object) as string;
  if (Array.isArray(object))
    return `[${object.map((item) => reference(item === undefined ? null : item)).join(",")}]`;
  const record = object as Record<string, unknown>;
  const values = Object.keys(record)
    .sort()
    .filter((key) => record[key] !== undefined)
    .map((key) => `${reference(key)}:${reference(record[key])}`);
  return `{${values.join(",")}}`;
}

describe("canonicalize (RFC 8785)", () => {
  it("gives the RFC's canonical text for its examples", () => {
    for (const [input, output] of vectors) expect(canonicalize(JSON.parse(input))).toBe(output);
  });

  it("writes every number of the RFC's appendix B as it prescribes, and refuses NaN and Infinity", () => {
    for (const [hex, text] of numbers)
      expect(canonicalize(Buffer.from(hex, "hex").readDoubleBE(0)), hex).toBe(text);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(() => canonicalize([bad])).toThrow(TypeError);
      expect(canonicalize([bad], { lenient: true })).toBe("[null]");
    }
    expect(() => canonicalize({ a: 1n })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalize(cyclic)).toThrow(/cycle/);
  });

  it("agrees with the reference implementation and is stable under key order and re-parsing (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalize(value);
        expect(text).toBe(reference(value));
        expect(canonicalize(JSON.parse(text))).toBe(text);
        return true;
      }),
      { numRuns: 300 },
    );
    const shuffled = { b: [1, { y: 2, x: 1 }], a: "z" };
    expect(canonicalize(shuffled)).toBe(canonicalize({ a: "z", b: [1, { x: 1, y: 2 }] }));
  });

  it("is what digestOf hashes: SHA-256 hex of the canonical UTF-8 bytes", () => {
    const args = { order_id: "A1001", amount: 89.99, note: "café ☕" };
    expect(digestOf(args)).toBe(
      createHash("sha256")
        .update(Buffer.from(canonicalize(args), "utf8"))
        .digest("hex"),
    );
    expect(digestOf(args)).toMatch(/^[0-9a-f]{64}$/);
  });
});

const askRefunds: Gate = {
  name: "refund_review",
  step: "2",
  check: (call) =>
    call.tool === "issue_refund"
      ? { type: "ask", reason: "refund_review", message: "Refunds need a person's approval." }
      : { type: "allow" },
};

describe("approvals bound to RFC 8785 digests", () => {
  it("give the approver the digest it can recompute, and refuse an approval recorded under the old digest as stale, saying why", async () => {
    const refund = tool({
      name: "issue_refund",
      description: "Refund an order.",
      input: v.object({ order_id: v.string(), amount: v.number() }),
      run: async () => "refunded",
    });
    const script = () =>
      scriptedModel([
        {
          content: [
            {
              type: "tool_use",
              id: "toolu_1",
              name: "issue_refund",
              input: { order_id: "A1001", amount: 900 },
            },
          ],
          stop_reason: "tool_use",
        },
        { content: [{ type: "text", text: "done" }] },
      ]);
    const store = memoryEventStore();
    const options = {
      tools: [refund],
      gates: [askRefunds],
      store,
      approval: { durable: true },
    };
    const parked = await createAgent({ model: script(), ...options }).run("refund A1001");
    expect(parked.status).toBe("awaiting_approval");
    const events = await store.read(parked.runId);
    const request = events.find((event) => event.type === "approval-request") as StoredEvent & {
      argsDigest: string;
    };
    expect(request.argsDigest).toBe(
      createHash("sha256").update('{"amount":900,"order_id":"A1001"}').digest("hex"),
    );
    // The same log, as an earlier loopguard wrote it: a 16-character digest.
    const legacy = memoryEventStore();
    await legacy.append(
      parked.runId,
      events.map((event) =>
        event.type === "approval-request"
          ? { ...event, argsDigest: request.argsDigest.slice(0, 16) }
          : event,
      ),
      { expectedSeq: 0 },
    );
    const result = await createAgent({ model: script(), ...options, store: legacy }).approve(
      parked.runId,
      { decision: "approve", approver: "alice" },
    );
    expect(result.blocked.map((entry) => entry.reason)).toEqual(["approval_stale"]);
    expect(result.blocked[0]!.message).toMatch(/earlier loopguard \(before RFC 8785 digests\)/);
  });
});
