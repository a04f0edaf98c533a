import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileGlob } from "./glob.js";

describe("compileGlob", () => {
  it("matches *, ? and {a,b}", () => {
    expect(compileGlob("send_*").test("send_email")).toBe(true);
    expect(compileGlob("send_*").test("send_")).toBe(true);
    expect(compileGlob("send_*").test("resend_email")).toBe(false);
    expect(compileGlob("*_order").test("lookup_order")).toBe(true);
    expect(compileGlob("*_order").test("lookup_orders")).toBe(false);
    expect(compileGlob("a*b*c").test("axxbyyc")).toBe(true);
    expect(compileGlob("a*b*c").test("axxcyyb")).toBe(false);
    expect(compileGlob("get_?").test("get_a")).toBe(true);
    expect(compileGlob("get_?").test("get_ab")).toBe(false);
    expect(compileGlob("send_{email,sms}").test("send_sms")).toBe(true);
    expect(compileGlob("send_{email,sms}").test("send_fax")).toBe(false);
    expect(compileGlob("{issue,void}_{refund,credit{,_note}}").test("void_credit_note")).toBe(true);
    expect(compileGlob("{issue,void}_{refund,credit{,_note}}").test("void_credit")).toBe(true);
    expect(compileGlob("*").test("")).toBe(true);
    expect(compileGlob("exact").test("exact")).toBe(true);
    expect(compileGlob("exact").test("exactly")).toBe(false);
    expect(compileGlob("a\\*b").test("a*b")).toBe(true);
    expect(compileGlob("a\\*b").test("axb")).toBe(false);
  });

  it("rejects malformed globs with a clear error", () => {
    expect(() => compileGlob("send_{email")).toThrow(
      /\[policy\] tool glob "send_\{email" is invalid: it has a "\{" without a matching "\}"/,
    );
    expect(() => compileGlob("a}")).toThrow(/without a matching/);
    expect(() => compileGlob("")).toThrow(/non-empty/);
    expect(() => compileGlob("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}")).toThrow(
      /more than 256 alternatives/,
    );
  });

  it("agrees with a reference regular expression on random globs and names", () => {
    const alphabet = fc.constantFrom("a", "b", "_");
    const piece = fc.oneof(
      alphabet,
      fc.constant("*"),
      fc.constant("?"),
      fc.tuple(alphabet, alphabet).map(([x, y]) => `{${x},${y}${x}}`),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 8 }),
        fc.string({ unit: alphabet, maxLength: 12 }),
        (pieces, name) => {
          const glob = pieces.join("");
          const source = pieces
            .map((item) =>
              item === "*"
                ? ".*"
                : item === "?"
                  ? "."
                  : item.startsWith("{")
                    ? `(?:${item.slice(1, -1).replace(",", "|")})`
                    : item,
            )
            .join("");
          expect(compileGlob(glob).test(name)).toBe(new RegExp(`^(?:${source})$`, "s").test(name));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("stays fast on inputs that make backtracking regexes explode", () => {
    const glob = compileGlob("*a*a*a*a*a*a*a*a*a*a*b");
    const name = "a".repeat(5000);
    // A backtracking matcher takes centuries here; this one does a bounded scan per segment.
    expect(glob.test(name)).toBe(false);
    expect(glob.test(`${name}b`)).toBe(true);
  });
});
