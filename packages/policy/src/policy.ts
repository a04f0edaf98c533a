import {
  type AllowDecision,
  type AskDecision,
  type DenyDecision,
  type Gate,
  InvalidArgumentError,
  type JsonValue,
  type ToolCall,
} from "@loopguard/core";
import { canonicalJson, sha256 } from "@loopguard/core/plugin";
import { PolicyFrozenError } from "./errors.js";
import { describeValue } from "./predicate.js";
import { type CompiledRule, type Effect, type Rule, type RuleInput, toRule } from "./rule.js";

/** Options of `policy()`. */
export interface PolicyOptions {
  /** What happens to a call no rule matches. Default `"allow"`; shown in the digest. */
  default?: Effect;
  /** The clock for time windows (epoch ms). Default `Date.now`. */
  now?: () => number;
}

/** The policy as policy-document JSON. */
export interface PolicyJson {
  version: 1;
  default: Effect;
  rules: JsonValue[];
  [key: string]: JsonValue;
}

/** The policy gate: allow/ask/deny rules at step 2. */
export interface PolicyGate extends Gate {
  readonly name: "policy";
  readonly step: "2";
  /** The rules, in the order given (order does not change any decision). */
  readonly rules: readonly Rule[];
  /** What happens when no rule matches. */
  readonly default: Effect;
  /** Whether `freeze()` was called. */
  readonly frozen: boolean;
  /** Adds rules; throws `PolicyFrozenError` once frozen. */
  add(...rules: RuleInput[]): this;
  /** Makes the policy immutable: `add` throws from now on (rules themselves are always frozen). */
  freeze(): this;
  /** SHA-256 (hex) of the canonical JSON of every setting. */
  digest(): string;
  /** The policy as a versioned document (`loadPolicy` reads it back when no rule uses a function). */
  toJSON(): PolicyJson;
  check(call: ToolCall): AllowDecision | DenyDecision | AskDecision;
}

const allowDecision: AllowDecision = Object.freeze({ type: "allow" });
const effects: readonly Effect[] = ["allow", "ask", "deny"];

interface Candidates {
  deny: CompiledRule[];
  ask: CompiledRule[];
  allow: CompiledRule[];
}

/** Extra settings covered by the digest (the rest of a loaded policy document). */
export interface PolicyInternals {
  digestExtra?: () => Record<string, JsonValue>;
}

/**
 * Builds the policy gate (step 2, `policy`) from allow/ask/deny rules. The most restrictive
 * matching rule wins (deny over ask over allow), so rule order never matters; a call no rule
 * matches gets the `default`. A condition that throws or cannot decide fails closed: a deny or
 * ask rule applies, an allow rule does not. Refusals carry a stable reason (`policy_deny`,
 * `policy_default_deny`, `role_not_allowed`, `outside_time_window`), a message and fix hints;
 * an ask becomes an approval at step 3 (`policy_ask`, `policy_default_ask`).
 *
 * @example
 * const gate = policy([
 *   deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }),
 *   ask("issue_refund", { when: argGt("refund.amount", 500) }),
 *   allow("lookup_*"),
 * ], { default: "deny" }).freeze();
 */
export function policy(rules: readonly RuleInput[], options: PolicyOptions = {}): PolicyGate {
  return createPolicyGate(rules, options, {});
}

/** `policy()` with the settings of a loaded document folded into its digest. */
export function createPolicyGate(
  rules: readonly RuleInput[],
  options: PolicyOptions,
  internals: PolicyInternals,
): PolicyGate {
  if (!Array.isArray(rules)) {
    throw new InvalidArgumentError(
      `[policy] policy(rules, options): rules must be an array of allow(), ask() or deny() rules, got ${describeValue(rules)}`,
    );
  }
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      '[policy] policy(rules, options): options must be an object such as { default: "deny" }',
    );
  const fallback = options.default ?? "allow";
  if (!effects.includes(fallback)) {
    throw new InvalidArgumentError(
      `[policy] policy(rules, { default }): default must be "allow", "ask" or "deny", got ${describeValue(fallback)}`,
    );
  }
  if (options.now !== undefined && typeof options.now !== "function")
    throw new InvalidArgumentError(
      "[policy] policy(rules, { now }): now must be a function returning epoch milliseconds",
    );
  const now = options.now ?? Date.now;
  const list: Rule[] = [];
  const compiledList: CompiledRule[] = [];
  const labels = new Map<CompiledRule, string>();
  let frozen = false;
  let cachedDigest: string | undefined;
  // Candidate rules per tool name: built on first sight of a name, dropped when rules change.
  const byTool = new Map<string, Candidates>();

  const addAll = (inputs: readonly RuleInput[]) => {
    const additions = inputs.map((input, index) => toRule(input, `rules[${list.length + index}]`));
    for (const { rule, compiled } of additions) {
      labels.set(
        compiled,
        rule.id ??
          `${rule.effect} ${typeof rule.tool === "string" ? rule.tool : rule.tool.join(",")} (rules[${list.length}])`,
      );
      list.push(rule);
      compiledList.push(compiled);
    }
    byTool.clear();
    cachedDigest = undefined;
  };
  addAll(rules);

  const candidatesFor = (tool: string): Candidates => {
    let found = byTool.get(tool);
    if (!found) {
      found = { deny: [], ask: [], allow: [] };
      for (const entry of compiledList)
        if (entry.tool.test(tool)) found[entry.rule.effect].push(entry);
      if (byTool.size >= 1024) byTool.clear();
      byTool.set(tool, found);
    }
    return found;
  };

  const toJSON = (): PolicyJson => ({
    version: 1,
    default: fallback,
    rules: list.map((rule) => rule.toJSON()),
  });

  const gate: PolicyGate = {
    name: "policy",
    step: "2",
    get rules() {
      return Object.freeze([...list]);
    },
    default: fallback,
    get frozen() {
      return frozen;
    },
    add(...inputs) {
      if (frozen) throw new PolicyFrozenError("policy.add(rule)");
      addAll(inputs);
      return gate;
    },
    freeze() {
      frozen = true;
      return gate;
    },
    digest() {
      cachedDigest ??= sha256(canonicalJson({ ...toJSON(), ...(internals.digestExtra?.() ?? {}) }));
      return cachedDigest;
    },
    toJSON,
    check(call) {
      const candidates = candidatesFor(call.tool);
      const roles = call.run?.roles ?? [];
      let clock: number | undefined;
      const time = () => (clock ??= now());
      let missedOn: "role" | "window" | undefined;
      let missedRule: CompiledRule | undefined;
      let allowError: string | undefined;

      const evaluate = (entry: CompiledRule): { matched: boolean; error?: string } => {
        if (entry.roles && !roles.some((role) => entry.roles!.has(role))) {
          if (entry.rule.effect !== "deny" && missedOn === undefined) {
            missedOn = "role";
            missedRule = entry;
          }
          return { matched: false };
        }
        if (entry.window && !entry.window.contains(time())) {
          if (entry.rule.effect !== "deny" && missedOn !== "window") {
            missedOn = "window";
            missedRule = entry;
          }
          return { matched: false };
        }
        if (!entry.when) return { matched: true };
        try {
          return { matched: entry.when.test(call.args, call) === true };
        } catch (error) {
          // Fail closed: a deny or ask rule whose condition cannot decide applies; an allow rule does not.
          const message = error instanceof Error ? error.message : String(error);
          if (entry.rule.effect === "allow") {
            allowError ??= message;
            return { matched: false };
          }
          return { matched: true, error: message };
        }
      };

      for (const entry of candidates.deny) {
        const result = evaluate(entry);
        if (result.matched) return denyFor(call, entry, labels.get(entry)!, result.error);
      }
      for (const entry of candidates.ask) {
        const result = evaluate(entry);
        if (result.matched) return askFor(call, entry, labels.get(entry)!, result.error);
      }
      for (const entry of candidates.allow) {
        if (evaluate(entry).matched) return allowDecision;
      }
      if (fallback === "allow") return allowDecision;
      return defaultDecision(
        call,
        fallback,
        missedOn,
        missedRule,
        missedRule ? labels.get(missedRule) : undefined,
        allowError,
      );
    },
  };
  // The gate object itself is frozen: no one can swap its check for another.
  return Object.freeze(gate);
}

function whenText(entry: CompiledRule): string {
  return entry.when ? ` when ${entry.when.description}` : "";
}

function denyFor(
  call: ToolCall,
  entry: CompiledRule,
  label: string,
  error: string | undefined,
): DenyDecision {
  const rule = entry.rule;
  const message =
    rule.message ??
    `The policy does not allow ${call.tool}${whenText(entry)}${error ? ` (the condition could not be checked: ${error}, so the rule applied)` : ""}.`;
  return {
    type: "deny",
    reason: rule.reason ?? "policy_deny",
    message,
    fixHints: rule.fixHints
      ? [...rule.fixHints]
      : entry.when
        ? [
            `Change the call so that it no longer holds that ${entry.when.description}, or tell the user this is not allowed.`,
          ]
        : [`Do not call ${call.tool}; continue without it or tell the user it is not allowed.`],
    details: { rule: label, ...(error ? { predicateError: error } : {}) },
  };
}

function askFor(
  call: ToolCall,
  entry: CompiledRule,
  label: string,
  error: string | undefined,
): AskDecision {
  const rule = entry.rule;
  return {
    type: "ask",
    reason: rule.reason ?? "policy_ask",
    message:
      rule.message ??
      `A person must approve ${call.tool}${whenText(entry)}${error ? ` (the condition could not be checked: ${error})` : ""}.`,
    details: { rule: label, ...(error ? { predicateError: error } : {}) },
  };
}

function defaultDecision(
  call: ToolCall,
  fallback: "ask" | "deny",
  missedOn: "role" | "window" | undefined,
  missed: CompiledRule | undefined,
  label: string | undefined,
  allowError: string | undefined,
): DenyDecision | AskDecision {
  const near = missed && label ? { rule: label } : {};
  const errorDetail = allowError ? { predicateError: allowError } : {};
  if (fallback === "ask") {
    return {
      type: "ask",
      reason: "policy_default_ask",
      message: `No rule allows ${call.tool}${missedOn === "role" ? " for this agent's roles" : missedOn === "window" ? " at this time" : ""}, so a person must approve it.`,
      details: { default: "ask", ...near, ...errorDetail },
    };
  }
  if (missedOn === "role" && missed?.roles) {
    return {
      type: "deny",
      reason: "role_not_allowed",
      message: `${call.tool} is allowed only for the roles ${[...missed.roles].join(", ")}, and this run has ${call.run?.roles.length ? `the roles ${call.run.roles.join(", ")}` : "no role"}.`,
      fixHints: [
        `Do not call ${call.tool}; hand the request to someone with the ${[...missed.roles].join(" or ")} role, or tell the user.`,
      ],
      details: { default: "deny", ...near, ...errorDetail },
    };
  }
  if (missedOn === "window" && missed?.window) {
    return {
      type: "deny",
      reason: "outside_time_window",
      message: `${call.tool} is allowed only during ${missed.window.description}, and it is outside that window now.`,
      fixHints: [
        `Do not call ${call.tool} now; tell the user it can be done during ${missed.window.description}.`,
      ],
      details: { default: "deny", ...near, ...errorDetail },
    };
  }
  return {
    type: "deny",
    reason: "policy_default_deny",
    message: `No rule allows ${call.tool}${allowError ? ` (an allow rule's condition could not be checked: ${allowError})` : ""}, and the policy denies what it does not allow.`,
    fixHints: [`Do not call ${call.tool}; use another tool or tell the user it is not allowed.`],
    details: { default: "deny", ...errorDetail },
  };
}
