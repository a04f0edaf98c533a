import { InvalidArgumentError, type JsonValue } from "@loopguard/core";
import { compileGlobs, type GlobMatcher } from "./glob.js";
import {
  deepFreeze,
  describeValue,
  type Predicate,
  toPredicate,
  type WhenFunction,
} from "./predicate.js";
import { type CompiledWindow, compileWindow, type TimeWindow } from "./time-window.js";

/** What a rule does to the calls it matches. The most restrictive matching rule wins: deny over ask over allow. */
export type Effect = "allow" | "ask" | "deny";

/** Options of a rule. */
export interface RuleOptions {
  /** The rule applies only when this holds (a predicate, or a function of the arguments and the call). */
  when?: Predicate | WhenFunction;
  /** The rule applies only to runs with one of these roles (`withRun({ roles })`, `createAgent({ context: { roles } })`). */
  roles?: readonly string[];
  /** The rule applies only inside this time window. */
  window?: TimeWindow;
  /** A name for the rule, shown in decisions (`details.rule`). Default: effect, tool and position. */
  id?: string;
  /** The reason code when this rule refuses or asks. Default `policy_deny` / `policy_ask`. */
  reason?: string;
  /** The message for the model and the host. Default: generated from the rule. */
  message?: string;
  /** What the model could do instead. */
  fixHints?: readonly string[];
}

/** One rule: an effect on tool-name globs, with optional conditions. Rules are frozen values. */
export interface Rule {
  readonly effect: Effect;
  /** Tool-name globs: `*`, `?`, `{a,b}`. */
  readonly tool: string | readonly string[];
  readonly when?: Predicate;
  readonly roles?: readonly string[];
  readonly window?: TimeWindow;
  readonly id?: string;
  readonly reason?: string;
  readonly message?: string;
  readonly fixHints?: readonly string[];
  /** The rule as policy-document JSON. */
  toJSON(): JsonValue;
}

/** A rule as plain data (what `policy()` also accepts): `{ effect: "deny", tool: "send_*" }`. */
export type RuleInput = Rule | ({ effect: Effect; tool: string | readonly string[] } & RuleOptions);

/** What the policy gate uses to judge a rule quickly (hidden from callers). */
export interface CompiledRule {
  readonly rule: Rule;
  readonly tool: GlobMatcher;
  readonly when: Predicate | undefined;
  readonly roles: ReadonlySet<string> | undefined;
  readonly window: CompiledWindow | undefined;
}

const compiled = new WeakMap<Rule, CompiledRule>();
const reasonPattern = /^[a-z][a-z0-9_]{0,63}$/;

/** The compiled form of a rule made by `allow`, `ask`, `deny` or `toRule`. */
export function compiledRule(rule: Rule): CompiledRule | undefined {
  return compiled.get(rule);
}

function makeRule(
  effect: Effect,
  tool: string | readonly string[],
  options: RuleOptions | undefined,
  where: string,
): Rule {
  if (options !== undefined && (options === null || typeof options !== "object")) {
    throw new InvalidArgumentError(
      `[policy] ${where}: options must be an object such as { when: argGt("amount", 500) }, got ${describeValue(options)}`,
    );
  }
  const settings = options ?? {};
  const matcher = compileGlobs(tool, `${where}.tool`);
  const toolValue = typeof tool === "string" ? tool : deepFreeze([...tool]);
  const when = settings.when !== undefined ? toPredicate(settings.when, where) : undefined;
  let roles: readonly string[] | undefined;
  if (settings.roles !== undefined) {
    if (
      !Array.isArray(settings.roles) ||
      settings.roles.length === 0 ||
      settings.roles.some((role) => typeof role !== "string" || role.length === 0)
    ) {
      throw new InvalidArgumentError(
        `[policy] ${where}: roles must be a non-empty array of role names such as ["support"], got ${describeValue(settings.roles)}`,
      );
    }
    roles = deepFreeze([...new Set(settings.roles)].sort());
  }
  const window =
    settings.window !== undefined ? compileWindow(settings.window, `${where}.window`) : undefined;
  if (
    settings.id !== undefined &&
    (typeof settings.id !== "string" || settings.id.length === 0 || settings.id.length > 128)
  ) {
    throw new InvalidArgumentError(
      `[policy] ${where}: id must be a non-empty string of at most 128 characters, got ${describeValue(settings.id)}`,
    );
  }
  if (
    settings.reason !== undefined &&
    (typeof settings.reason !== "string" || !reasonPattern.test(settings.reason))
  ) {
    throw new InvalidArgumentError(
      `[policy] ${where}: reason must be a snake_case code such as "refund_too_large", got ${describeValue(settings.reason)}`,
    );
  }
  if (settings.message !== undefined && typeof settings.message !== "string") {
    throw new InvalidArgumentError(
      `[policy] ${where}: message must be a string, got ${describeValue(settings.message)}`,
    );
  }
  if (
    settings.fixHints !== undefined &&
    (!Array.isArray(settings.fixHints) ||
      settings.fixHints.some((hint) => typeof hint !== "string"))
  ) {
    throw new InvalidArgumentError(
      `[policy] ${where}: fixHints must be an array of strings, got ${describeValue(settings.fixHints)}`,
    );
  }
  const fixHints = settings.fixHints ? deepFreeze([...settings.fixHints]) : undefined;
  const json = deepFreeze({
    effect,
    tool: toolValue,
    ...(when ? { when: when.toJSON() } : {}),
    ...(roles ? { roles } : {}),
    ...(window ? { window: window.toJSON() } : {}),
    ...(settings.id !== undefined ? { id: settings.id } : {}),
    ...(settings.reason !== undefined ? { reason: settings.reason } : {}),
    ...(settings.message !== undefined ? { message: settings.message } : {}),
    ...(fixHints ? { fixHints } : {}),
  } as unknown as { [key: string]: JsonValue });
  const rule: Rule = Object.freeze({
    effect,
    tool: toolValue,
    ...(when ? { when } : {}),
    ...(roles ? { roles } : {}),
    ...(window ? { window: window.toJSON() as unknown as TimeWindow } : {}),
    ...(settings.id !== undefined ? { id: settings.id } : {}),
    ...(settings.reason !== undefined ? { reason: settings.reason } : {}),
    ...(settings.message !== undefined ? { message: settings.message } : {}),
    ...(fixHints ? { fixHints } : {}),
    toJSON: () => json,
  });
  compiled.set(rule, {
    rule,
    tool: matcher,
    when,
    roles: roles ? new Set(roles) : undefined,
    window,
  });
  return rule;
}

/**
 * A rule that lets matching calls through (unless a deny or ask rule also matches).
 *
 * @example
 * allow("lookup_*")
 * allow("send_email", { roles: ["support"], window: { start: "09:00", end: "17:00", timeZone: "Europe/Paris" } })
 */
export function allow(tool: string | readonly string[], options?: RuleOptions): Rule {
  return makeRule("allow", tool, options, `allow(${describeValue(tool)})`);
}

/**
 * A rule that sends matching calls to a person for approval (step 3), unless a deny rule also
 * matches.
 *
 * @example
 * ask("issue_refund", { when: argGt("amount", 500) })
 */
export function ask(tool: string | readonly string[], options?: RuleOptions): Rule {
  return makeRule("ask", tool, options, `ask(${describeValue(tool)})`);
}

/**
 * A rule that refuses matching calls, whatever else matches.
 *
 * @example
 * deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })
 */
export function deny(tool: string | readonly string[], options?: RuleOptions): Rule {
  return makeRule("deny", tool, options, `deny(${describeValue(tool)})`);
}

/** Turns a rule or plain rule data into a compiled rule; plain data is validated. */
export function toRule(input: RuleInput, where: string): { rule: Rule; compiled: CompiledRule } {
  if (input !== null && typeof input === "object") {
    const existing = compiled.get(input as Rule);
    if (existing) return { rule: existing.rule, compiled: existing };
    const { effect, tool, ...options } = input as { effect: unknown; tool: unknown } & RuleOptions;
    if (effect !== "allow" && effect !== "ask" && effect !== "deny") {
      throw new InvalidArgumentError(
        `[policy] ${where}.effect must be "allow", "ask" or "deny", got ${describeValue(effect)}`,
      );
    }
    const rule = makeRule(effect, tool as string, options, where);
    return { rule, compiled: compiled.get(rule)! };
  }
  throw new InvalidArgumentError(
    `[policy] ${where} must be a rule made with allow(), ask() or deny(), got ${describeValue(input)}`,
  );
}
