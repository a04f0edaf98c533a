// Every public factory of @loopguard/redact, fed input it cannot use: each must throw a
// RedactOptionsError whose message starts with `[redact]`, names the entry point and says what
// to pass instead. A raw TypeError, or nonsense accepted silently, fails here.
import { describe, expect, it } from "vitest";
import {
  builtinDetector,
  createRedactionStream,
  createRedactor,
  createVault,
  isSensitiveKey,
  patchConsole,
  patternDetector,
  pinoRedaction,
  RedactError,
  RedactOptionsError,
  redact,
  redactDeep,
  redactFormat,
} from "./index.js";

// biome-ignore lint/suspicious/noExplicitAny: these tests pass what the types forbid.
const bad = (value: unknown): any => value;

function thrown(make: () => unknown): RedactOptionsError {
  let caught: unknown;
  try {
    make();
  } catch (error) {
    caught = error;
  }
  expect(caught, "expected the call to throw").toBeDefined();
  expect(RedactError.isInstance(caught), `not a redact error: ${String(caught)}`).toBe(true);
  expect(caught).toBeInstanceOf(RedactOptionsError);
  return caught as RedactOptionsError;
}

const quietConsole = () =>
  ({ log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} }) as unknown as Console;

describe("bad input to every public factory of @loopguard/redact", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["redact: a number", () => redact(bad(42)), /redact\(text\) takes a string; got number/],
    ["redact: options a string", () => redact("x", bad("EMAIL")), /options must be an object/],
    [
      "redact: unknown option",
      () => redact("x", bad({ type: ["EMAIL"] })),
      /unknown option "type"/,
    ],
    [
      "redact: unknown type",
      () => redact("x", { types: bad(["SSN_US"]) }),
      /unknown type "SSN_US"/,
    ],
    [
      "redact: types a string",
      () => redact("x", { types: bad("EMAIL") }),
      /types must be an array/,
    ],
    ["redact: bad placeholder", () => redact("x", { placeholder: bad("stars") }), /placeholder/],
    ["redact: scope a Map", () => redact("x", { scope: bad(new Map()) }), /scope must be/],
    ["redact: detector without find", () => redact("x", { detectors: bad([{}]) }), /find\(text\)/],
    [
      "redact: detector type lowercase",
      () => redact("x", { detectors: [{ type: "emp", name: "emp", find: () => [] }] }),
      /upper snake case/,
    ],
    [
      "redactDeep: maxDepth 0",
      () => redactDeep({}, { maxDepth: 0 }),
      /^\[redact\] redactDeep.*maxDepth/,
    ],
    [
      "redactDeep: sensitiveKeys a string",
      () => redactDeep({}, bad({ sensitiveKeys: "pin" })),
      /sensitiveKeys/,
    ],
    [
      "createRedactor: options a number",
      () => createRedactor(bad(1)),
      /^\[redact\] createRedactor/,
    ],
    ["createRedactor: maxDepth NaN", () => createRedactor({ maxDepth: Number.NaN }), /maxDepth/],
    ["createVault: options null", () => createVault(bad(null)), /^\[redact\] createVault/],
    [
      "createVault: a placeholder",
      () => createVault(bad({ placeholder: "type" })),
      /drop placeholder/,
    ],
    [
      "createVault: unknown type",
      () => createVault({ types: bad(["NAME"]) }),
      /unknown type "NAME"/,
    ],
    [
      "stream: holdBack 0",
      () => createRedactionStream({ holdBack: 0 }),
      /holdBack must be a positive integer/,
    ],
    ["stream: maxBuffer 1.5", () => createRedactionStream({ maxBuffer: 1.5 }), /maxBuffer/],
    [
      "stream: unknown option",
      () => createRedactionStream(bad({ hold: 5 })),
      /unknown option "hold"/,
    ],
    [
      "pinoRedaction: unknown option",
      () => pinoRedaction(bad({ paths: ["a"] })),
      /^\[redact\] pinoRedaction.*"paths"/,
    ],
    ["redactFormat: options a string", () => redactFormat(bad("json")), /^\[redact\] redactFormat/],
    [
      "patternDetector: no options",
      () => patternDetector(bad(undefined)),
      /options object \{ type, pattern \}/,
    ],
    [
      "patternDetector: type lowercase",
      () => patternDetector({ type: "emp", pattern: /x/ }),
      /upper snake case/,
    ],
    [
      "patternDetector: pattern a string",
      () => patternDetector({ type: "EMP", pattern: bad("EMP-\\d+") }),
      /RegExp/,
    ],
    [
      "patternDetector: group -1",
      () => patternDetector({ type: "EMP", pattern: /x/, group: -1 }),
      /group/,
    ],
    [
      "patternDetector: validate a string",
      () => patternDetector({ type: "EMP", pattern: /x/, validate: bad("luhn") }),
      /validate/,
    ],
    [
      "patternDetector: group past the pattern's groups",
      () => patternDetector({ type: "EMP", pattern: /EMP-(\d+)/, group: 2 }),
      /^\[redact\] patternDetector: group 2.*1 capture group/,
    ],
    [
      "patternDetector: priority NaN",
      () => patternDetector({ type: "EMP", pattern: /x/, priority: Number.NaN }),
      /^\[redact\] patternDetector: priority must be a finite number/,
    ],
    [
      "patternDetector: maxLength 0",
      () => patternDetector({ type: "EMP", pattern: /x/, maxLength: 0 }),
      /^\[redact\] patternDetector: maxLength must be a positive integer/,
    ],
    [
      "patternDetector: empty name",
      () => patternDetector({ type: "EMP", pattern: /x/, name: "" }),
      /^\[redact\] patternDetector: name must be a non-empty string/,
    ],
    [
      "builtinDetector: unknown type",
      () => builtinDetector(bad("SSN")),
      /^\[redact\] builtinDetector: unknown type "SSN"; use one of .*EMAIL/,
    ],
    [
      "builtinDetector: a number",
      () => builtinDetector(bad(3)),
      /^\[redact\] builtinDetector: unknown type 3/,
    ],
    [
      "isSensitiveKey: a number",
      () => isSensitiveKey(bad(3)),
      /^\[redact\] isSensitiveKey\(key\) takes a string; got number/,
    ],
    [
      "patchConsole: null",
      () => patchConsole(bad(null)),
      /^\[redact\] patchConsole: options must be an object/,
    ],
    [
      "patchConsole: methods a string",
      () => patchConsole({ console: quietConsole(), methods: bad("log") }),
      /^\[redact\] patchConsole: methods must be an array/,
    ],
    [
      "patchConsole: unknown method",
      () => patchConsole({ console: quietConsole(), methods: bad(["print"]) }),
      /^\[redact\] patchConsole: .*"print"/,
    ],
    [
      "patchConsole: a method the console lacks",
      () => patchConsole({ console: quietConsole(), methods: ["dir"] }),
      /^\[redact\] patchConsole: console\.dir is not a function/,
    ],
    [
      "patchConsole: console a string",
      () => patchConsole({ console: bad("stdout") }),
      /console must be a Console/,
    ],
  ];

  for (const [name, make, message] of cases) {
    it(name, () => {
      const error = thrown(make);
      expect(error.message).toMatch(/^\[redact\] /);
      expect(error.message).toMatch(message);
    });
  }

  it("patchConsole leaves the console untouched when its options are invalid", () => {
    const target = quietConsole();
    const log = target.log;
    expect(() => patchConsole({ console: target, methods: bad(["log", "print"]) })).toThrow(
      RedactOptionsError,
    );
    expect(target.log).toBe(log);
  });
});
