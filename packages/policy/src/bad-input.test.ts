// Every public factory of @loopguard/policy, fed input it cannot use: each must throw a
// loopguard error whose message starts with `[policy]`, names the entry point and the option,
// and says what to pass instead. A raw TypeError, or nonsense accepted silently, fails here.
import { thrownError as thrown } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import {
  all,
  allow,
  any,
  argDomainNotIn,
  argGt,
  argIn,
  argLt,
  argMatches,
  argNotIn,
  argPath,
  ask,
  deny,
  killSwitch,
  loadPolicy,
  not,
  policy,
  rateLimit,
  runGuard,
} from "./index.js";
import { compileGlob, parseFreezeFile } from "./internal/index.js";
import { fileFreezeStore, loadPolicyFile } from "./node/index.js";

// biome-ignore lint/suspicious/noExplicitAny: these tests pass what the types forbid.
const bad = (value: unknown): any => value;

describe("bad input to every public factory of @loopguard/policy", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["policy: rules not an array", () => policy(bad("deny")), /^\[policy\] policy\(rules.*array/],
    ["policy: options not an object", () => policy([], bad(3)), /^\[policy\] policy\(.*object/],
    ["policy: unknown default", () => policy([], { default: bad("block") }), /default must be/],
    ["policy: now not a function", () => policy([], { now: bad(5) }), /now must be a function/],
    ["policy: a rule that is a string", () => policy([bad("deny *")]), /^\[policy\]/],
    ["allow: no tool", () => allow(bad(undefined)), /^\[policy\] .*tool/],
    ["deny: empty tool", () => deny(""), /^\[policy\] .*tool/],
    ["ask: tool a number", () => ask(bad(42)), /^\[policy\] .*tool/],
    ["deny: roles not an array", () => deny("x", { roles: bad("admin") }), /roles/],
    ["deny: when not a predicate", () => deny("x", { when: bad("yes") }), /when/],
    ["deny: bad reason code", () => deny("x", { reason: "Not Snake" }), /reason/],
    ["deny: bad window", () => deny("x", { window: bad({ from: "25:00" }) }), /window/],
    ["argGt: bound a string", () => argGt("amount", bad("500")), /^\[policy\] argGt.*number/],
    ["argGt: bound NaN", () => argGt("amount", Number.NaN), /finite number, got NaN/],
    ["argLt: bound Infinity", () => argLt("amount", Number.POSITIVE_INFINITY), /got Infinity/],
    ["argLt: empty path", () => argLt("", 1), /^\[policy\] /],
    ["argIn: values not iterable", () => argIn("a", bad(3)), /^\[policy\] argIn/],
    ["argNotIn: values of objects", () => argNotIn("a", bad([{}])), /^\[policy\] argNotIn/],
    ["argMatches: pattern a string", () => argMatches("a", bad("x+")), /^\[policy\] argMatches/],
    ["argDomainNotIn: no domains", () => argDomainNotIn("to", []), /domains must not be empty/],
    ["argDomainNotIn: domains a string", () => argDomainNotIn("to", bad("a.com")), /^\[policy\]/],
    ["all: a number", () => all(bad(1)), /^\[policy\] /],
    ["any: a string", () => any(bad("x")), /^\[policy\] /],
    ["not: nothing", () => not(bad(undefined)), /^\[policy\] /],
    ["argPath: empty", () => argPath(""), /^\[policy\] /],
    ["argPath: a number", () => argPath(bad(3)), /^\[policy\] /],
    ["compileGlob: a number", () => compileGlob(bad(3)), /^\[policy\] /],
    ["runGuard: options a string", () => runGuard(bad("x")), /must be an object/],
    ["runGuard: loopRepeats 1", () => runGuard({ loopRepeats: 1 }), /2 to 100/],
    ["runGuard: loopRepeats 101", () => runGuard({ loopRepeats: 101 }), /2 to 100/],
    ["runGuard: maxLoopPeriod 0", () => runGuard({ maxLoopPeriod: 0 }), /1 to 10/],
    ["runGuard: maxLoopPeriod 2.5", () => runGuard({ maxLoopPeriod: 2.5 }), /1 to 10/],
    ["runGuard: detectLoops a string", () => runGuard({ detectLoops: bad("yes") }), /boolean/],
    [
      "runGuard: irreversibleTools a string",
      () => runGuard({ irreversibleTools: bad("x") }),
      /array/,
    ],
    ["runGuard: haltOn bad code", () => runGuard({ haltOn: ["Kill Switch"] }), /snake_case/],
    ["rateLimit: no limits", () => rateLimit([]), /^\[policy\] rateLimit/],
    [
      "rateLimit: capacity 0",
      () => rateLimit({ tool: "x", capacity: 0, refillPerSecond: 1 }),
      /^\[policy\] rateLimit.*capacity/,
    ],
    [
      "rateLimit: negative refill",
      () => rateLimit({ tool: "x", capacity: 1, refillPerSecond: -1 }),
      /^\[policy\] rateLimit.*refillPerSecond/,
    ],
    [
      "rateLimit: capacity a string",
      () => rateLimit({ tool: "x", capacity: bad("5"), refillPerSecond: 1 }),
      /capacity/,
    ],
    [
      "rateLimit: no tool",
      () => rateLimit(bad({ capacity: 1, refillPerSecond: 1 })),
      /^\[policy\] rateLimit.*tool/,
    ],
    [
      "rateLimit: now not a function",
      () => rateLimit({ tool: "x", capacity: 1, refillPerSecond: 1 }, { now: bad(1) }),
      /^\[policy\] rateLimit.*now/,
    ],
    ["killSwitch: no options", () => killSwitch(bad(undefined)), /^\[policy\] killSwitch/],
    ["killSwitch: store a path", () => killSwitch(bad({ store: "freeze.json" })), /FreezeStore/],
    ["fileFreezeStore: no options", () => fileFreezeStore(bad(undefined)), /path must be/],
    ["fileFreezeStore: empty path", () => fileFreezeStore({ path: " " }), /path must be/],
    [
      "fileFreezeStore: negative cacheMs",
      () => fileFreezeStore({ path: "f.json", cacheMs: -1 }),
      /^\[policy\] fileFreezeStore.*cacheMs/,
    ],
    [
      "fileFreezeStore: now not a function",
      () => fileFreezeStore({ path: "f.json", now: bad("now") }),
      /^\[policy\] fileFreezeStore.*now/,
    ],
    ["parseFreezeFile: not JSON", () => parseFreezeFile("{", "f.json"), /^\[policy\] .*f\.json/],
    ["loadPolicy: not JSON", () => loadPolicy("{"), /^\[policy\] /],
    ["loadPolicy: a number", () => loadPolicy(bad(3)), /^\[policy\] /],
    ["loadPolicy: wrong version", () => loadPolicy({ version: 2, rules: [] }), /version/],
    [
      "loadPolicy: gt a string",
      () =>
        loadPolicy({
          version: 1,
          rules: [{ effect: "ask", tool: "r", when: { arg: "a", gt: "5" } }],
        }),
      /rules\[0\]\.when/,
    ],
  ];

  for (const [name, make, message] of cases) {
    it(name, () => {
      const error = thrown(make);
      expect(error.message).toMatch(/^\[policy\] /);
      expect(error.message).toMatch(message);
    });
  }

  it("loadPolicyFile: an empty path and a missing file", async () => {
    await expect(loadPolicyFile("")).rejects.toThrow(/^\[policy\] loadPolicyFile\(path\)/);
    await expect(loadPolicyFile("/nonexistent/policy.json")).rejects.toThrow(
      /^\[policy\] \/nonexistent\/policy\.json: cannot read/,
    );
  });
});
