import { type Gate, type JsonValue, type LimitStore, LoopguardError } from "@loopguard/core";
import * as v from "valibot";
import { findDuplicateKey } from "./duplicate-keys.js";
import { PolicyValidationError } from "./errors.js";
import { createPolicyGate, type PolicyGate } from "./policy.js";
import {
  all,
  any,
  argDomainNotIn,
  argGt,
  argIn,
  argLt,
  argMatches,
  argNotIn,
  deepFreeze,
  not,
  type Predicate,
} from "./predicate.js";
import {
  type RateLimit,
  type RateLimitGate,
  rateLimit,
  type StoredRateLimitGate,
} from "./rate-limit.js";
import { type Rule, toRule } from "./rule.js";
import {
  type RunGuardGate,
  type RunGuardSettings,
  resolveRunGuardOptions,
  runGuard,
} from "./run-guard.js";
import { weekdays } from "./time-window.js";

const operators = ["gt", "lt", "in", "notIn", "matches", "domainNotIn"] as const;
const scalar = v.union([v.string(), v.pipe(v.number(), v.finite()), v.boolean(), v.null()]);
const globs = v.union([
  v.pipe(v.string(), v.minLength(1)),
  v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.minLength(1)),
]);
const argPathSchema = v.pipe(v.string(), v.minLength(1));

const operatorSchemas = {
  gt: v.strictObject({ arg: argPathSchema, gt: v.pipe(v.number(), v.finite()) }),
  lt: v.strictObject({ arg: argPathSchema, lt: v.pipe(v.number(), v.finite()) }),
  in: v.strictObject({ arg: argPathSchema, in: v.array(scalar) }),
  notIn: v.strictObject({ arg: argPathSchema, notIn: v.array(scalar) }),
  matches: v.strictObject({
    arg: argPathSchema,
    matches: v.pipe(
      v.string(),
      v.check((source) => {
        try {
          new RegExp(source);
          return true;
        } catch {
          return false;
        }
      }, "expected a valid regular expression"),
    ),
    flags: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^(?!.*(.).*\1)[imsu]*$/, 'expected flags from "imsu", each at most once'),
      ),
    ),
  }),
  domainNotIn: v.strictObject({
    arg: argPathSchema,
    domainNotIn: v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.minLength(1)),
    subdomains: v.optional(v.boolean()),
  }),
};

/** A condition in a policy document. */
export type ConditionJson =
  | { arg: string; gt: number }
  | { arg: string; lt: number }
  | { arg: string; in: Array<string | number | boolean | null> }
  | { arg: string; notIn: Array<string | number | boolean | null> }
  | { arg: string; matches: string; flags?: string }
  | { arg: string; domainNotIn: string[]; subdomains?: boolean }
  | { all: ConditionJson[] }
  | { any: ConditionJson[] }
  | { not: ConditionJson };

const condition: v.GenericSchema<ConditionJson> = v.lazy(
  (input): v.GenericSchema<ConditionJson> => {
    if (input === null || typeof input !== "object" || Array.isArray(input)) {
      return v.custom<ConditionJson>(
        () => false,
        `expected a condition object such as { "arg": "amount", "gt": 500 }, got ${received(input)}`,
      );
    }
    const keys = Object.keys(input);
    if ("all" in input)
      return v.strictObject({
        all: v.pipe(v.array(condition), v.minLength(1)),
      }) as v.GenericSchema<ConditionJson>;
    if ("any" in input)
      return v.strictObject({
        any: v.pipe(v.array(condition), v.minLength(1)),
      }) as v.GenericSchema<ConditionJson>;
    if ("not" in input) return v.strictObject({ not: condition }) as v.GenericSchema<ConditionJson>;
    const present = operators.filter((operator) => keys.includes(operator));
    if (!("arg" in input) || present.length !== 1) {
      const what =
        present.length > 1
          ? `only one operator per condition (found ${present.join(", ")}); combine them with "all"`
          : `"arg" with one of ${operators.join(", ")}, or "all", "any", "not"`;
      return v.custom<ConditionJson>(() => false, `expected ${what}, got ${received(input)}`);
    }
    return operatorSchemas[present[0]!] as v.GenericSchema<ConditionJson>;
  },
);

const clock = v.pipe(
  v.string(),
  v.regex(/^([01]\d|2[0-4]):[0-5]\d$/, 'expected a 24-hour time "HH:MM"'),
);

const ruleSchema = v.strictObject({
  effect: v.picklist(["allow", "ask", "deny"]),
  tool: globs,
  when: v.optional(condition),
  roles: v.optional(v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.minLength(1))),
  window: v.optional(
    v.strictObject({
      days: v.optional(
        v.pipe(
          v.array(v.picklist(weekdays as ["sun", "mon", "tue", "wed", "thu", "fri", "sat"])),
          v.minLength(1),
        ),
      ),
      start: clock,
      end: clock,
      timeZone: v.optional(v.pipe(v.string(), v.minLength(1))),
    }),
  ),
  id: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(128))),
  reason: v.optional(
    v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_]{0,63}$/, "expected a snake_case reason code")),
  ),
  message: v.optional(v.string()),
  fixHints: v.optional(v.array(v.string())),
});

const rateLimitSchema = v.strictObject({
  tool: globs,
  capacity: v.pipe(v.number(), v.integer(), v.minValue(1)),
  refillPerSecond: v.pipe(v.number(), v.finite(), v.gtValue(0)),
  perAgent: v.optional(v.boolean()),
  perTool: v.optional(v.boolean()),
});

const signalCount = v.union([
  v.literal(false),
  v.pipe(v.number(), v.integer(), v.minValue(2), v.maxValue(100)),
]);

const runGuardSchema = v.strictObject({
  haltOn: v.optional(
    v.array(
      v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_]{0,63}$/, "expected a snake_case reason code")),
    ),
  ),
  irreversibleTools: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
  detectLoops: v.optional(v.boolean()),
  loopRepeats: v.optional(v.pipe(v.number(), v.integer(), v.minValue(2), v.maxValue(100))),
  maxLoopPeriod: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10))),
  noProgress: v.optional(
    v.union([
      v.boolean(),
      v.strictObject({
        nearRepeats: v.optional(signalCount),
        numberTolerance: v.optional(v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(0.5))),
        numberGap: v.optional(v.pipe(v.number(), v.gtValue(0))),
        sameResults: v.optional(signalCount),
        oscillations: v.optional(signalCount),
        refusalStreak: v.optional(signalCount),
      }),
    ]),
  ),
});

/** The schema of a version 1 policy document. */
export const policyDocumentSchema = v.strictObject({
  version: v.literal(1),
  default: v.picklist(["allow", "ask", "deny"]),
  rules: v.array(ruleSchema),
  rateLimits: v.optional(v.array(rateLimitSchema)),
  runGuard: v.optional(runGuardSchema),
});

/** A version 1 policy document. */
export type PolicyDocument = v.InferOutput<typeof policyDocumentSchema>;

/** Options of `loadPolicy()`. */
export interface LoadPolicyOptions {
  /** The clock (epoch ms) for time windows and rate limits. Default `Date.now`. */
  now?: () => number;
  /**
   * Where the document's rate limits keep their buckets (a `LimitStore`, shared by a fleet).
   * Default: the process's memory. Replay and shadow never pass one: they judge against
   * buckets of their own.
   */
  limitStore?: LimitStore;
}

/** A loaded policy: its gates, ready for `createAgent({ gates })` or `guardTool`. */
export interface LoadedPolicy {
  /** The policy gate, then the rate-limit gate and the RunGuard when the document has them. */
  readonly gates: readonly Gate[];
  /** The policy gate (frozen); its `digest()` covers the whole document. */
  readonly policy: PolicyGate;
  readonly rateLimit?: RateLimitGate | StoredRateLimitGate;
  readonly runGuard?: RunGuardGate;
  /** SHA-256 of the document's canonical JSON, defaults filled in. */
  readonly digest: string;
  /** The document, validated and deep-frozen. */
  readonly document: PolicyDocument;
}

/**
 * Loads a versioned policy document (a JSON string or an object), validates it, and returns
 * its gates: the policy (frozen), the rate limits and the RunGuard. JSON text that names a key
 * twice in one object is refused. An invalid document throws
 * `PolicyValidationError` naming the JSON path and what was expected, e.g.
 * `[policy] rules[2].when.gt: expected a number, got "500"`.
 *
 * @example
 * const { gates, digest } = loadPolicy({
 *   version: 1,
 *   default: "deny",
 *   rules: [{ effect: "allow", tool: "lookup_*" }, { effect: "ask", tool: "issue_refund", when: { arg: "amount", gt: 500 } }],
 *   runGuard: { irreversibleTools: ["issue_refund"] },
 * });
 * const agent = createAgent({ model, tools, gates });
 */
export function loadPolicy(input: string | object, options: LoadPolicyOptions = {}): LoadedPolicy {
  let data: unknown = input;
  if (typeof input === "string") {
    try {
      data = JSON.parse(input);
    } catch (error) {
      throw new PolicyValidationError(
        [
          `(root): expected a JSON policy document, got text that is not JSON (${(error as Error).message})`,
        ],
        { cause: error },
      );
    }
    const duplicate = findDuplicateKey(input);
    if (duplicate) {
      throw new PolicyValidationError([
        `${duplicate.path}: duplicate key "${duplicate.key}"; name each key once (JSON keeps only the last one, so the document would not load as it reads)`,
      ]);
    }
  } else if (input === null || typeof input !== "object") {
    throw new PolicyValidationError([
      `(root): expected a policy document object or JSON text, got ${received(input)}`,
    ]);
  }
  const parsed = v.safeParse(policyDocumentSchema, data);
  if (!parsed.success)
    throw new PolicyValidationError(parsed.issues.flatMap((issue) => formatIssue(issue)));
  const document = deepFreeze(structuredClone(parsed.output));
  try {
    const rules: Rule[] = document.rules.map((rule, index) => {
      const where = `rules[${index}]`;
      const { when, ...rest } = rule;
      return toRule(
        {
          ...(rest as unknown as Rule),
          ...(when ? { when: predicateOf(when, `${where}.when`) } : {}),
        } as never,
        where,
      ).rule;
    });
    const rateLimitGate =
      document.rateLimits && document.rateLimits.length > 0
        ? options.limitStore
          ? rateLimit(document.rateLimits as readonly RateLimit[], {
              ...(options.now ? { now: options.now } : {}),
              store: options.limitStore,
            })
          : rateLimit(
              document.rateLimits as readonly RateLimit[],
              options.now ? { now: options.now } : {},
            )
        : undefined;
    const guard = document.runGuard ? runGuard(document.runGuard as never) : undefined;
    const extra = (): Record<string, JsonValue> => ({
      ...(rateLimitGate ? { rateLimits: rateLimitGate.limits as unknown as JsonValue } : {}),
      ...(document.runGuard
        ? { runGuard: guardDigestInput(resolveRunGuardOptions(document.runGuard as never)) }
        : {}),
    });
    const policyGate = createPolicyGate(
      rules,
      { default: document.default, ...(options.now ? { now: options.now } : {}) },
      { digestExtra: extra },
    ).freeze();
    const gates: Gate[] = [
      policyGate,
      ...(rateLimitGate ? [rateLimitGate] : []),
      ...(guard ? [guard] : []),
    ];
    return Object.freeze({
      gates: Object.freeze(gates),
      policy: policyGate,
      ...(rateLimitGate ? { rateLimit: rateLimitGate } : {}),
      ...(guard ? { runGuard: guard } : {}),
      digest: policyGate.digest(),
      document,
    });
  } catch (error) {
    if (LoopguardError.isInstance(error) && error.code === "invalid_argument") {
      throw new PolicyValidationError([(error as Error).message.replace(/^\[policy\] /, "")], {
        cause: error,
      });
    }
    throw error;
  }
}

/** The RunGuard's settings for the digest; no-progress detection left out when off, so older digests hold. */
function guardDigestInput(settings: RunGuardSettings): JsonValue {
  const { noProgress, ...rest } = settings;
  return (noProgress === false
    ? rest
    : { ...rest, noProgress: { ...noProgress } }) as unknown as JsonValue;
}

function predicateOf(json: ConditionJson, where: string): Predicate {
  if ("all" in json)
    return all(...json.all.map((item, index) => predicateOf(item, `${where}.all[${index}]`)));
  if ("any" in json)
    return any(...json.any.map((item, index) => predicateOf(item, `${where}.any[${index}]`)));
  if ("not" in json) return not(predicateOf(json.not, `${where}.not`));
  try {
    if ("gt" in json) return argGt(json.arg, json.gt);
    if ("lt" in json) return argLt(json.arg, json.lt);
    if ("in" in json) return argIn(json.arg, json.in);
    if ("notIn" in json) return argNotIn(json.arg, json.notIn);
    if ("matches" in json) return argMatches(json.arg, new RegExp(json.matches, json.flags ?? ""));
    return argDomainNotIn(json.arg, json.domainNotIn, json.subdomains ? { subdomains: true } : {});
  } catch (error) {
    if (LoopguardError.isInstance(error))
      throw new PolicyValidationError(
        [`${where}: ${(error as Error).message.replace(/^\[policy\] /, "")}`],
        { cause: error },
      );
    throw error;
  }
}

type Issue = v.BaseIssue<unknown>;

function formatIssue(issue: Issue): string[] {
  // A union reports its options' issues; show the one that got furthest.
  if (issue.type === "union" && issue.issues && issue.issues.length > 0) {
    const deepest = [...issue.issues].sort(
      (a, b) => (b.path?.length ?? 0) - (a.path?.length ?? 0),
    )[0]!;
    if ((deepest.path?.length ?? 0) > (issue.path?.length ?? 0)) return formatIssue(deepest);
  }
  const path = pathOf(issue.path);
  if (issue.type === "custom" || issue.type === "check" || issue.type === "regex")
    return [`${path}: ${issue.message}${issue.type === "custom" ? "" : `, got ${issue.received}`}`];
  if (issue.expected === "never") return [`${path}: unknown key; remove it`];
  if (issue.received === "undefined" && (issue.type === "object" || issue.type === "strict_object"))
    return [`${path}: missing; this key is required`];
  if (issue.received === "undefined")
    return [`${path}: missing; expected ${article(issue.expected ?? "a value")}`];
  if (
    issue.type === "min_length" ||
    issue.type === "max_length" ||
    issue.type === "min_value" ||
    issue.type === "max_value" ||
    issue.type === "gt_value" ||
    issue.type === "integer" ||
    issue.type === "finite"
  ) {
    return [`${path}: expected ${describeRequirement(issue)}, got ${issue.received}`];
  }
  return [
    `${path}: expected ${article(issue.expected ?? "a different value")}, got ${issue.received}`,
  ];
}

function describeRequirement(issue: Issue): string {
  switch (issue.type) {
    case "min_length":
      return `a length of at least ${issue.requirement}`;
    case "max_length":
      return `a length of at most ${issue.requirement}`;
    case "min_value":
      return `a number >= ${issue.requirement}`;
    case "max_value":
      return `a number <= ${issue.requirement}`;
    case "gt_value":
      return `a number > ${issue.requirement}`;
    case "integer":
      return "an integer";
    default:
      return "a finite number";
  }
}

function pathOf(path: Issue["path"]): string {
  if (!path || path.length === 0) return "(root)";
  let out = "";
  for (const item of path) {
    const key = item.key;
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

function article(expected: string): string {
  const names: Record<string, string> = {
    number: "a number",
    string: "a string",
    boolean: "a boolean",
    Array: "an array",
    Object: "an object",
    null: "null",
  };
  if (names[expected]) return names[expected]!;
  if (expected.includes("|")) {
    const options = expected.replace(/^\((.*)\)$/, "$1").split(" | ");
    if (options.every((option) => option.startsWith('"'))) return `one of ${options.join(", ")}`;
    return options.map((option) => names[option] ?? option).join(" or ");
  }
  return expected;
}

function received(value: unknown): string {
  if (value === undefined) return "nothing";
  try {
    return JSON.stringify(value)?.slice(0, 80) ?? String(value);
  } catch {
    return String(value);
  }
}
