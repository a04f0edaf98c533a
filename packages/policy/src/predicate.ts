import { InvalidArgumentError, type JsonValue, type ToolCall } from "@loopguard/core";
import { type ArgPath, argPath } from "./arg-path.js";
import { foldLookAlikes, foldText, hasScalar, scalarKeys } from "./normalize-value.js";

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
  // NaN and the infinities fail closed: -Infinity is "less than" every bound, and NaN compares
  // false both ways, so either would let a call past a numeric rule.
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new PredicateUndecidable(
      `expected a finite number at "${path.text}", got ${describeValue(value)}`,
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
 * The scalars a value stands for: itself, or the elements of an array (nested arrays flattened),
 * so `["enterprise"]` cannot slip past a list that holds `"enterprise"`. `undefined` when the
 * value is missing. Throws when it cannot be compared (an object, a non-finite number, an empty
 * array, or an array deeper or longer than a policy should have to read).
 */
function scalarsOf(path: string, value: unknown): Scalar[] | undefined {
  if (value === undefined) return undefined;
  const out: Scalar[] = [];
  const visit = (item: unknown, depth: number) => {
    if (Array.isArray(item)) {
      if (depth >= 8 || out.length + item.length > 10_000)
        throw new PredicateUndecidable(`the array at "${path}" is too deep or too long to compare`);
      for (const element of item) visit(element, depth + 1);
      return;
    }
    if (
      item === null ||
      typeof item === "string" ||
      typeof item === "boolean" ||
      (typeof item === "number" && Number.isFinite(item))
    ) {
      out.push(item);
      return;
    }
    throw new PredicateUndecidable(
      `expected a string, finite number, boolean or null at "${path}", got ${describeValue(item)}`,
    );
  };
  visit(value, 0);
  if (out.length === 0) throw new PredicateUndecidable(`the array at "${path}" is empty`);
  return out;
}

/** Whether every scalar of the value is in the set (true), none is (false); a mix cannot decide. */
function membership(path: string, value: unknown, keys: ReadonlySet<string>): boolean | undefined {
  // One string, the common case: no arrays built.
  if (typeof value === "string") {
    const found = hasScalar(keys, value);
    const folded = foldLookAlikes(value);
    if (folded !== value && hasScalar(keys, folded) !== found)
      throw new PredicateUndecidable(
        `the value at "${path}" differs from a listed value only by look-alike letters, so the condition cannot decide`,
      );
    return found;
  }
  const scalars = scalarsOf(path, value);
  if (scalars === undefined) return undefined;
  let inside = 0;
  for (const scalar of scalars) {
    const found = listed(scalar, keys);
    if (typeof scalar === "string") {
      const folded = foldLookAlikes(scalar);
      // A value that only looks like a listed one (or only looks unlike it) cannot be judged:
      // a deny list must not miss it, an allow list must not admit it.
      if (folded !== scalar && listed(folded, keys) !== found)
        throw new PredicateUndecidable(
          `the value at "${path}" differs from a listed value only by look-alike letters, so the condition cannot decide`,
        );
    }
    if (found) inside += 1;
  }
  if (inside === scalars.length) return true;
  if (inside === 0) return false;
  throw new PredicateUndecidable(
    `some values at "${path}" are in the list and some are not, so the condition cannot decide`,
  );
}

function listed(scalar: Scalar, keys: ReadonlySet<string>): boolean {
  return hasScalar(keys, scalar);
}

function keySet(list: readonly Scalar[]): ReadonlySet<string> {
  const keys = new Set<string>();
  for (const value of list) for (const key of scalarKeys(value)) keys.add(key);
  return keys;
}

/**
 * Holds when the value at `path` is one of `values` (strings, numbers, booleans, null).
 * Values are compared the way the taint gate compares them: strings after NFKC, without
 * invisible characters or Latin accents, lower case, whitespace collapsed and trimmed
 * (`"ＥＮＴＥＲＰＲＩＳＥ "` is `"enterprise"`); a number equals its decimal text (`500` is
 * `"500"`). A value that matches a listed one only once Cyrillic or Greek look-alikes are
 * folded (`"еnterprise"`) cannot decide. An array is judged by its elements: all in the list
 * holds, none does not, a mix cannot decide (the rule fails closed). A missing value is not in the list; an object or a
 * non-finite number cannot decide.
 *
 * @example
 * deny("change_plan", { when: argIn("plan", ["enterprise"]) })
 */
export function argIn(path: string, values: Iterable<Scalar>): Predicate {
  const compiled = argPath(path);
  const { list } = scalarSet(`argIn(${JSON.stringify(path)}, ...)`, values);
  const keys = keySet(list);
  return make(
    `"${path}" is one of ${list.map((value) => JSON.stringify(value)).join(", ")}`,
    { arg: path, in: list },
    (args) => membership(path, compiled.read(args), keys) === true,
  );
}

/**
 * Holds when the value at `path` is not one of `values`, compared as `argIn` compares. A
 * missing value is not in the list, so it matches (fail closed for deny rules); an array with
 * some elements in the list and some not cannot decide (the rule fails closed).
 *
 * @example
 * deny("issue_refund", { when: argNotIn("currency", ["EUR", "USD"]) })
 */
export function argNotIn(path: string, values: Iterable<Scalar>): Predicate {
  const compiled = argPath(path);
  const { list } = scalarSet(`argNotIn(${JSON.stringify(path)}, ...)`, values);
  const keys = keySet(list);
  return make(
    `"${path}" is not one of ${list.map((value) => JSON.stringify(value)).join(", ")}`,
    { arg: path, notIn: list },
    (args) => membership(path, compiled.read(args), keys) !== true,
  );
}

/**
 * Holds when the string (or number) at `path` matches `pattern`. The text is tried as given and
 * folded (NFKC, no invisible characters or Latin accents, Cyrillic and Greek look-alikes
 * folded, whitespace collapsed and trimmed; case is left to the pattern's `i` flag): when the two disagree (`"ＤＲＯＰ"` for `/drop/i`,
 * `"basic "` for `/^basic$/`) the condition cannot decide and the rule fails closed. An array
 * is judged by its elements (all match, none match, or cannot decide). Any other value cannot
 * be matched: the rule fails closed. The `g` and `y` flags are dropped so the test has no
 * state. The regular expression is yours: keep it free of nested quantifiers, since the model
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
  const matchOne = (item: unknown): boolean => {
    const text =
      typeof item === "string"
        ? item
        : typeof item === "number" && Number.isFinite(item)
          ? String(item)
          : undefined;
    if (text === undefined)
      throw new PredicateUndecidable(`expected a string at "${path}", got ${describeValue(item)}`);
    const raw = regex.test(text);
    const folded = foldText(foldLookAlikes(text));
    if (folded === text || regex.test(folded) === raw) return raw;
    throw new PredicateUndecidable(
      `the text at "${path}" matches only in one of its raw and folded forms, so the condition cannot decide`,
    );
  };
  return make(
    `"${path}" matches /${regex.source}/${flags}`,
    { arg: path, matches: regex.source, ...(flags ? { flags } : {}) },
    (args) => {
      const value = compiled.read(args);
      if (!Array.isArray(value)) return matchOne(value);
      const scalars = scalarsOf(path, value)!;
      let matched = 0;
      for (const item of scalars) if (matchOne(item)) matched += 1;
      if (matched === scalars.length) return true;
      if (matched === 0) return false;
      throw new PredicateUndecidable(
        `some values at "${path}" match and some do not, so the condition cannot decide`,
      );
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
      // Nothing readable, or a part that is neither an email nor a URL: not inside.
      if (hosts === undefined || hosts.length === 0) return true;
      for (const host of hosts) if (!inside(host)) return true;
      return false;
    },
  );
}

// local@host, the local part plain or quoted ("ann lee"@acme-shop.com).
const emailPattern = /^("(?:[^"\\\r\n]|\\.){0,128}"|[^\s@<>,;"()[\]\\:]+)@([^\s@<>,;"()[\]\\:]+)$/;

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
  const single = hostsOfOne(text);
  if (single !== undefined) return single;
  if (/[,;]/.test(text)) {
    const hosts: string[] = [];
    for (const part of text.split(/[,;]/)) {
      const found = hostsOfOne(part.trim());
      if (found === undefined) return undefined;
      hosts.push(...found);
    }
    return hosts;
  }
  return undefined;
}

function hostsOfOne(text: string): string[] | undefined {
  // "Ann Lee <ann@acme-shop.com>": only the address inside the brackets counts.
  const bracket = /^[^<>@"]*<([^<>]+)>$/.exec(text);
  const address = bracket ? bracket[1]!.trim() : text;
  const email = emailPattern.exec(
    address.toLowerCase().startsWith("mailto:") ? address.slice(7) : address,
  );
  if (email) {
    const host = normaliseHost(email[2]!);
    if (!host) return undefined;
    const routed = routedHosts(email[1]!);
    return routed === undefined ? undefined : [host, ...routed];
  }
  if (bracket) return undefined;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined;
  try {
    const url = new URL(text);
    const host = url.hostname ? normaliseHost(url.hostname) : undefined;
    return host ? [host] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Hosts a local part routes mail through, or `undefined` when it cannot be read safely. Relays
 * that still honour the percent hack deliver `x%evil.example@acme-shop.com` to evil.example,
 * and UUCP bang paths (`evil.example!x@acme-shop.com`) do the same, so those hosts must be
 * inside too. A quoted local part holding `@`, `%`, `!` or brackets is read differently by
 * different mail parsers: it cannot be judged, so it counts as outside.
 */
function routedHosts(local: string): string[] | undefined {
  if (local.startsWith('"')) {
    return /[@%!<>,;:\\]/.test(local.slice(1, -1)) ? undefined : [];
  }
  if (!local.includes("%") && !local.includes("!")) return [];
  const hosts: string[] = [];
  const bang = local.split("!");
  const last = bang.pop()!;
  const percent = last.split("%");
  percent.shift();
  for (const name of [...bang, ...percent]) {
    const host = normaliseHost(name);
    if (!host?.includes(".")) return undefined;
    hosts.push(host);
  }
  return hosts;
}

const asciiHost = /^[a-z0-9](?:[a-z0-9-]{0,62}\.)*[a-z0-9-]{1,63}$/;

function normaliseHost(host: string): string | undefined {
  const trimmed = host.trim().toLowerCase().replace(/\.$/, "");
  // A percent sign would be decoded by the URL parser ("acme%2dshop.com"), which no mail server does.
  if (trimmed.length === 0 || trimmed.length > 253 || /[\s/@:?#%!"]/.test(trimmed))
    return undefined;
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
