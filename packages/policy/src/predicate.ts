import { InvalidArgumentError, type JsonValue, type ToolCall } from "@loopguard/core";
import { type ArgPath, argPath } from "./arg-path.js";

const predicateBrand = Symbol.for("loopguard.policy.predicate");

/**
 * A condition on a tool call's arguments. Build them with `argGt`, `argIn`, `argDomainNotIn`,
 * `all`, `any`, `not`, or pass a function `(args, call) => boolean`.
 *
 * A predicate that cannot decide (a missing number, a value of the wrong type) throws; the rule
 * then fails closed: a `deny` or `ask` rule applies, an `allow` rule does not.
 */
export interface Predicate {
  readonly [predicateBrand]: true;
  /** Whether the call's arguments meet the condition. May throw when it cannot decide. */
  test(args: Record<string, unknown>, call: ToolCall): boolean;
  /** What the condition says, in words, for messages to the model. */
  readonly description: string;
  /** The condition as policy-document JSON (`{ "arg": "amount", "gt": 500 }`); functions as `{ "fn": source }`. */
  toJSON(): JsonValue;
}

/** A function condition, as accepted by `when`. */
export type WhenFunction = (args: Record<string, unknown>, call: ToolCall) => boolean;

/** Thrown by a predicate that cannot decide; the rule fails closed. */
export class PredicateUndecidable extends Error {
  override readonly name = "PredicateUndecidable";
}

function make(description: string, json: JsonValue, test: Predicate["test"]): Predicate {
  const frozenJson = deepFreeze(json);
  return Object.freeze({
    [predicateBrand]: true as const,
    test,
    description,
    toJSON: () => frozenJson,
  });
}

/** Whether a value is a predicate built by this package. */
export function isPredicate(value: unknown): value is Predicate {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<symbol, unknown>)[predicateBrand] === true
  );
}

/** Turns a `when` (predicate or function) into a predicate. */
export function toPredicate(when: Predicate | WhenFunction, where: string): Predicate {
  if (isPredicate(when)) return when;
  if (typeof when === "function") {
    const source = Function.prototype.toString.call(when);
    return make(
      `a custom condition (${when.name || "anonymous"})`,
      { fn: source },
      (args, call) => {
        const result = when(args, call);
        if (typeof result !== "boolean")
          throw new PredicateUndecidable(`the condition returned ${typeof result}, not a boolean`);
        return result;
      },
    );
  }
  throw new InvalidArgumentError(
    `[policy] ${where}: when must be a predicate (argGt, argIn, all, ...) or a function (args, call) => boolean, got ${describeValue(when)}`,
  );
}

function numberAt(path: ArgPath, args: Record<string, unknown>): number {
  const value = path.read(args);
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new PredicateUndecidable(
      `expected a number at "${path.text}", got ${describeValue(value)}`,
    );
  }
  return value;
}

function checkNumber(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new InvalidArgumentError(
      `[policy] ${name}: the bound must be a finite number, got ${describeValue(value)}`,
    );
  }
  return value;
}

/**
 * Holds when the number at `path` is greater than `bound`. A missing or non-number value cannot
 * be compared: the rule fails closed.
 *
 * @example
 * ask("issue_refund", { when: argGt("amount", 500) })
 */
export function argGt(path: string, bound: number): Predicate {
  const compiled = argPath(path);
  const limit = checkNumber(`argGt(${JSON.stringify(path)}, ...)`, bound);
  return make(
    `"${path}" is more than ${limit}`,
    { arg: path, gt: limit },
    (args) => numberAt(compiled, args) > limit,
  );
}

/**
 * Holds when the number at `path` is less than `bound`. A missing or non-number value cannot
 * be compared: the rule fails closed.
 *
 * @example
 * allow("issue_refund", { when: argLt("amount", 100) })
 */
export function argLt(path: string, bound: number): Predicate {
  const compiled = argPath(path);
  const limit = checkNumber(`argLt(${JSON.stringify(path)}, ...)`, bound);
  return make(
    `"${path}" is less than ${limit}`,
    { arg: path, lt: limit },
    (args) => numberAt(compiled, args) < limit,
  );
}

type Scalar = string | number | boolean | null;

function scalarSet(
  name: string,
  values: Iterable<Scalar> | readonly Scalar[],
): { set: ReadonlySet<Scalar>; list: Scalar[] } {
  if (
    values === null ||
    typeof values !== "object" ||
    typeof (values as Iterable<Scalar>)[Symbol.iterator] !== "function" ||
    typeof values === "string"
  ) {
    throw new InvalidArgumentError(
      `[policy] ${name}: values must be an array or a Set of strings, numbers, booleans or null, got ${describeValue(values)}`,
    );
  }
  const list: Scalar[] = [];
  for (const value of values as Iterable<unknown>) {
    if (
      value !== null &&
      typeof value !== "string" &&
      typeof value !== "boolean" &&
      !(typeof value === "number" && Number.isFinite(value))
    ) {
      throw new InvalidArgumentError(
        `[policy] ${name}: values must be strings, finite numbers, booleans or null, got ${describeValue(value)}`,
      );
    }
    list.push(value);
  }
  // A copy: changing the caller's Set or array later does not change the rule.
  const set = new Set(list);
  return { set, list: sortScalars([...set]) };
}

function sortScalars(values: Scalar[]): Scalar[] {
  return values.sort((a, b) => {
    const left = JSON.stringify(a);
    const right = JSON.stringify(b);
    return left < right ? -1 : left > right ? 1 : 0;
  });
}

/**
 * Holds when the value at `path` is one of `values` (strict equality; strings, numbers,
 * booleans, null). A missing value is not in the set.
 *
 * @example
 * deny("change_plan", { when: argIn("plan", ["enterprise"]) })
 */
export function argIn(path: string, values: Iterable<Scalar>): Predicate {
  const compiled = argPath(path);
  const { set, list } = scalarSet(`argIn(${JSON.stringify(path)}, ...)`, values);
  return make(
    `"${path}" is one of ${list.map((value) => JSON.stringify(value)).join(", ")}`,
    { arg: path, in: list },
    (args) => set.has(compiled.read(args) as Scalar),
  );
}

/**
 * Holds when the value at `path` is not one of `values`. A missing value is not in the set, so
 * it matches (fail closed for deny rules).
 *
 * @example
 * deny("issue_refund", { when: argNotIn("currency", ["EUR", "USD"]) })
 */
export function argNotIn(path: string, values: Iterable<Scalar>): Predicate {
  const compiled = argPath(path);
  const { set, list } = scalarSet(`argNotIn(${JSON.stringify(path)}, ...)`, values);
  return make(
    `"${path}" is not one of ${list.map((value) => JSON.stringify(value)).join(", ")}`,
    { arg: path, notIn: list },
    (args) => !set.has(compiled.read(args) as Scalar),
  );
}

/**
 * Holds when the string (or number) at `path` matches `pattern`. Any other value cannot be
 * matched: the rule fails closed. The `g` and `y` flags are dropped so the test has no state.
 * The regular expression is yours: keep it free of nested quantifiers, since the model
 * chooses the text it runs on.
 *
 * @example
 * deny("run_sql", { when: argMatches("query", /\b(drop|truncate)\b/i) })
 */
export function argMatches(path: string, pattern: RegExp): Predicate {
  const compiled = argPath(path);
  if (!(pattern instanceof RegExp)) {
    throw new InvalidArgumentError(
      `[policy] argMatches(${JSON.stringify(path)}, pattern): pattern must be a RegExp, got ${describeValue(pattern)}`,
    );
  }
  const flags = pattern.flags.replace(/[gy]/g, "");
  const regex = new RegExp(pattern.source, flags);
  return make(
    `"${path}" matches /${regex.source}/${flags}`,
    { arg: path, matches: regex.source, ...(flags ? { flags } : {}) },
    (args) => {
      const value = compiled.read(args);
      if (typeof value === "string") return regex.test(value);
      if (typeof value === "number") return regex.test(String(value));
      throw new PredicateUndecidable(`expected a string at "${path}", got ${describeValue(value)}`);
    },
  );
}

/** Options of `argDomainNotIn`. */
export interface DomainOptions {
  /** Count subdomains of a listed domain as inside (`mail.acme-shop.com` for `acme-shop.com`). Default `false`: exact hosts only. */
  subdomains?: boolean;
}

/**
 * Holds when the email domain or URL host at `path` is not one of `domains`. The value may be
 * an email (`a@acme-shop.com`, `Ann <a@acme-shop.com>`, `mailto:`), a list of emails separated
 * by `,` or `;` (every one must be inside), an absolute URL (its host), or an array of these.
 * Anything else (a bare word, a missing value, an empty list) counts as not in the set, so the
 * predicate matches: a deny rule fails closed. Hosts are compared lowercased, without a
 * trailing dot, in their ASCII (punycode) form. Subdomains count as inside only with
 * `{ subdomains: true }`.
 *
 * @example
 * deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })
 */
export function argDomainNotIn(
  path: string,
  domains: Iterable<string>,
  options: DomainOptions = {},
): Predicate {
  const compiled = argPath(path);
  const name = `argDomainNotIn(${JSON.stringify(path)}, ...)`;
  if (
    domains === null ||
    typeof domains !== "object" ||
    typeof (domains as Iterable<string>)[Symbol.iterator] !== "function"
  ) {
    throw new InvalidArgumentError(
      `[policy] ${name}: domains must be an array of domains such as ["acme-shop.com"], got ${describeValue(domains)}`,
    );
  }
  const allowed = new Set<string>();
  for (const domain of domains) {
    const host = typeof domain === "string" ? normaliseHost(domain) : undefined;
    if (!host)
      throw new InvalidArgumentError(
        `[policy] ${name}: ${describeValue(domain)} is not a domain; write it as "acme-shop.com"`,
      );
    allowed.add(host);
  }
  if (allowed.size === 0)
    throw new InvalidArgumentError(`[policy] ${name}: domains must not be empty`);
  const subdomains = options.subdomains === true;
  const inside = (host: string): boolean => {
    if (allowed.has(host)) return true;
    if (!subdomains) return false;
    for (let dot = host.indexOf("."); dot >= 0; dot = host.indexOf(".", dot + 1)) {
      if (allowed.has(host.slice(dot + 1))) return true;
    }
    return false;
  };
  const list = [...allowed].sort();
  return make(
    `the domain of "${path}" is not ${list.join(" or ")}${subdomains ? " (or a subdomain)" : ""}`,
    { arg: path, domainNotIn: list, ...(subdomains ? { subdomains: true } : {}) },
    (args) => {
      const hosts = hostsOf(compiled.read(args));
      if (hosts === undefined || hosts.length === 0) return true;
      for (const host of hosts) if (!inside(host)) return true;
      return false;
    },
  );
}

const emailPattern = /^[^\s@<>,;"()[\]\\:]+@([^\s@<>,;"()[\]\\:]+)$/;

/** The hosts a value names, or `undefined` when any part is neither an email nor a URL. */
function hostsOf(value: unknown): string[] | undefined {
  if (Array.isArray(value)) {
    const hosts: string[] = [];
    for (const item of value) {
      const found = hostsOf(item);
      if (found === undefined) return undefined;
      hosts.push(...found);
    }
    return hosts;
  }
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text.length === 0 || text.length > 4096) return undefined;
  const single = hostOfOne(text);
  if (single !== undefined) return [single];
  if (/[,;]/.test(text)) {
    const hosts: string[] = [];
    for (const part of text.split(/[,;]/)) {
      const host = hostOfOne(part.trim());
      if (host === undefined) return undefined;
      hosts.push(host);
    }
    return hosts;
  }
  return undefined;
}

function hostOfOne(text: string): string | undefined {
  // "Ann Lee <ann@acme-shop.com>": only the address inside the brackets counts.
  const bracket = /^[^<>@]*<([^<>]+)>$/.exec(text);
  const address = bracket ? bracket[1]!.trim() : text;
  const email = emailPattern.exec(
    address.toLowerCase().startsWith("mailto:") ? address.slice(7) : address,
  );
  if (email) return normaliseHost(email[1]!);
  if (bracket) return undefined;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined;
  try {
    const url = new URL(text);
    return url.hostname ? normaliseHost(url.hostname) : undefined;
  } catch {
    return undefined;
  }
}

const asciiHost = /^[a-z0-9](?:[a-z0-9-]{0,62}\.)*[a-z0-9-]{1,63}$/;

function normaliseHost(host: string): string | undefined {
  const trimmed = host.trim().toLowerCase().replace(/\.$/, "");
  if (trimmed.length === 0 || trimmed.length > 253 || /[\s/@:?#]/.test(trimmed)) return undefined;
  // Plain ASCII names are already in canonical form; only others go through the URL parser (punycode).
  if (asciiHost.test(trimmed) && !trimmed.includes("xn--") && !/^[0-9.]+$/.test(trimmed))
    return trimmed;
  try {
    const hostname = new URL(`http://${trimmed}/`).hostname;
    return hostname.replace(/\.$/, "") || undefined;
  } catch {
    return undefined;
  }
}

function checkPredicates(
  name: string,
  predicates: readonly (Predicate | WhenFunction)[],
): Predicate[] {
  if (predicates.length === 0)
    throw new InvalidArgumentError(`[policy] ${name}() needs at least one condition`);
  return predicates.map((predicate, index) =>
    toPredicate(predicate, `${name}() condition ${index}`),
  );
}

/**
 * Holds when every condition holds.
 *
 * @example
 * deny("issue_refund", { when: all(argGt("amount", 100), argIn("reason", ["changed_mind"])) })
 */
export function all(...predicates: (Predicate | WhenFunction)[]): Predicate {
  const list = checkPredicates("all", predicates);
  return make(
    list.map((predicate) => predicate.description).join(" and "),
    { all: list.map((predicate) => predicate.toJSON()) },
    (args, call) => {
      for (const predicate of list) if (!predicate.test(args, call)) return false;
      return true;
    },
  );
}

/**
 * Holds when at least one condition holds.
 *
 * @example
 * ask("issue_refund", { when: any(argGt("amount", 500), argIn("currency", ["JPY"])) })
 */
export function any(...predicates: (Predicate | WhenFunction)[]): Predicate {
  const list = checkPredicates("any", predicates);
  return make(
    list.map((predicate) => predicate.description).join(" or "),
    { any: list.map((predicate) => predicate.toJSON()) },
    (args, call) => {
      for (const predicate of list) if (predicate.test(args, call)) return true;
      return false;
    },
  );
}

/**
 * Holds when the condition does not. A condition that cannot decide still cannot decide under
 * `not`: the rule fails closed either way.
 *
 * @example
 * allow("send_email", { when: not(argDomainNotIn("to", ["acme-shop.com"])) })
 */
export function not(predicate: Predicate | WhenFunction): Predicate {
  const inner = toPredicate(predicate, "not()");
  return make(
    `not (${inner.description})`,
    { not: inner.toJSON() },
    (args, call) => !inner.test(args, call),
  );
}

/** A short, safe rendering of a value for messages. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "function") return "a function";
  if (typeof value === "bigint") return `${value}n`;
  // JSON would print NaN and the infinities as null, which hides the mistake.
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  if (typeof value === "symbol") return value.toString();
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** Freezes a JSON-like value and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
