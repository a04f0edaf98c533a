import * as checkpointPackage from "@loopguard/checkpoint";
import {
  type Approver,
  type Gate,
  InvalidArgumentError,
  type OutputEnvelope,
  type Scanner,
} from "@loopguard/core";
import * as injectionPackage from "@loopguard/injection";
import * as policyPackage from "@loopguard/policy";
import { createRedactor } from "@loopguard/redact";
import * as tracingOtelPackage from "@loopguard/tracing-otel";
import { companyDomain } from "./support-desk/fixtures.js";
import { type SupportVault, supportVault } from "./support-vault.js";

/** A workspace package the scorecard builds its defences and stores from. */
export type OptionalPackage = "policy" | "injection" | "checkpoint" | "tracing-otel";

/** The packages the scorecard uses, imported statically and typed. */
export interface LoadedPackages {
  modules: {
    policy: typeof policyPackage;
    injection: typeof injectionPackage;
    checkpoint: typeof checkpointPackage;
    "tracing-otel": typeof tracingOtelPackage;
  };
}

const packages: LoadedPackages = Object.freeze({
  modules: Object.freeze({
    policy: policyPackage,
    injection: injectionPackage,
    checkpoint: checkpointPackage,
    "tracing-otel": tracingOtelPackage,
  }),
});

/** The packages the scorecard uses (statically imported dependencies of @loopguard/evals). */
export function loadPackages(): Promise<LoadedPackages> {
  return Promise.resolve(packages);
}

/** A defence the tests may switch off to prove the scorecard catches its absence. */
export type Sabotage =
  | "taint_gate"
  | "policy_ask"
  | "policy_deny"
  | "scanner"
  | "redaction"
  | "idempotency_keys"
  | "model_retries"
  | "run_guard"
  | "vault"
  /**
   * Agents-as-tools without loopguard's link: the delegating tool runs the child agent as a
   * second, unrelated run (own id, budget, gates, trace, log), as peers' agents-as-tools do.
   */
  | "delegation";

/** Every defence the scorecard can switch off, for checking `sabotage` lists. */
export const sabotageNames: readonly Sabotage[] = Object.freeze([
  "taint_gate",
  "policy_ask",
  "policy_deny",
  "scanner",
  "redaction",
  "idempotency_keys",
  "model_retries",
  "run_guard",
  "vault",
  "delegation",
]);

/** Checks a `sabotage` list: a misspelt name must not leave a defence on while a test thinks it is off. */
export function checkSabotage(sabotage: unknown, where: string): readonly Sabotage[] {
  if (sabotage === undefined) return [];
  if (!Array.isArray(sabotage))
    throw new InvalidArgumentError(
      `[evals] ${where}: sabotage must be an array of defence names such as ["taint_gate"]; known: ${sabotageNames.join(", ")}`,
    );
  for (const name of sabotage) {
    if (!sabotageNames.includes(name as Sabotage))
      throw new InvalidArgumentError(
        `[evals] ${where}: unknown sabotage ${JSON.stringify(name)}; known: ${sabotageNames.join(", ")}`,
      );
  }
  return sabotage as Sabotage[];
}

/** The support desk's defences, built from whatever packages have loaded. */
export interface SupportDefences {
  gates: Gate[];
  scanner?: Scanner;
  envelope?: OutputEnvelope;
  redact: (value: unknown) => unknown;
  /** A fresh vault for one run: customer PII is tokenised before the model or the log sees it. */
  vault?: SupportVault;
  /** What is in place, for the narration (e.g. `policy`, `taint gate`). */
  active: string[];
}

/** Options of `supportDefences`. */
export interface SupportDefenceOptions {
  /** Defences to leave out (tests prove the scorecard fails without them). */
  sabotage?: readonly Sabotage[];
  /** Refunds above this amount ask a person. Default 500. */
  approvalAboveUsd?: number;
  /** Extra RunGuard options (kill switch store, loop settings). */
  runGuard?: Record<string, unknown>;
  /** Leave the RunGuard out (scenarios that test another gate alone). */
  withoutRunGuard?: boolean;
}

/**
 * The support desk's production defences: the policy (email only inside the company, ask
 * a person for refunds above $500), the RunGuard (refunds are irreversible), the taint gate,
 * the heuristic scanner with the quarantine envelope, redaction of every trace and log, and a
 * PII vault so the model and the event log see tokens, never customer data.
 */
export function supportDefences(
  packages: LoadedPackages,
  options: SupportDefenceOptions = {},
): SupportDefences {
  if (
    packages === null ||
    typeof packages !== "object" ||
    typeof packages.modules !== "object" ||
    typeof packages.modules.policy !== "object"
  )
    throw new InvalidArgumentError(
      "[evals] supportDefences(packages, options): packages must be what loadPackages() resolves to ({ modules })",
    );
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[evals] supportDefences(packages, options): options must be an object",
    );
  const sabotage = new Set(checkSabotage(options.sabotage, "supportDefences"));
  if (
    options.approvalAboveUsd !== undefined &&
    (typeof options.approvalAboveUsd !== "number" ||
      !Number.isFinite(options.approvalAboveUsd) ||
      options.approvalAboveUsd < 0)
  )
    throw new InvalidArgumentError(
      `[evals] supportDefences: approvalAboveUsd must be a finite amount >= 0 (default 500), got ${String(options.approvalAboveUsd)}`,
    );
  const gates: Gate[] = [];
  const active: string[] = [];
  const policyModule = packages.modules.policy;
  const injection = packages.modules.injection;
  const rules = [];
  if (!sabotage.has("policy_deny"))
    rules.push(
      policyModule.deny("send_email", {
        when: policyModule.argDomainNotIn("to", [companyDomain]),
      }),
    );
  if (!sabotage.has("policy_ask"))
    rules.push(
      policyModule.ask("issue_refund", {
        when: policyModule.argGt("amount", options.approvalAboveUsd ?? 500),
      }),
    );
  rules.push(policyModule.allow("*"));
  gates.push(policyModule.policy(rules));
  active.push("policy");
  if (!options.withoutRunGuard && !sabotage.has("run_guard")) {
    gates.push(policyModule.runGuard({ irreversibleTools: ["issue_refund"], ...options.runGuard }));
    active.push("run guard");
  }
  let scanner: Scanner | undefined;
  const envelope = injection.quarantine();
  active.push("quarantine envelope");
  if (!sabotage.has("taint_gate")) {
    // Provenance: the refund's order and the email's recipient must come from the task or a
    // trusted tool, whatever the scanner said; with the sealed envelope, detection taints only
    // the flagged spans.
    gates.push(
      injection.taintGate({
        envelope,
        sinks: [
          { tool: "send_email", args: ["to"], require: "trusted" },
          { tool: "issue_refund", args: ["order_id"], require: "trusted" },
        ],
      }),
    );
    active.push("taint gate (with provenance)");
  }
  if (!sabotage.has("scanner")) {
    scanner = injection.defaultScanner();
    active.push("default scanner (rules + learned)");
  }
  const redactor = sabotage.has("redaction") ? (value: unknown) => value : createRedactor();
  if (!sabotage.has("redaction")) active.push("redaction");
  const vault = sabotage.has("vault") ? undefined : supportVault();
  if (vault) active.push("PII vault");
  return {
    gates,
    ...(vault ? { vault } : {}),
    ...(scanner ? { scanner } : {}),
    envelope,
    redact: redactor,
    active,
  };
}

/** An approver that answers every request the same way, recording who asked. */
export function fixedApprover(
  answer: "approve" | "deny",
  approver = "eval-supervisor",
): Approver & { requests: string[] } {
  if (answer !== "approve" && answer !== "deny")
    throw new InvalidArgumentError(
      `[evals] fixedApprover(answer): answer must be "approve" or "deny", got ${JSON.stringify(answer)}`,
    );
  if (typeof approver !== "string" || approver.trim() === "")
    throw new InvalidArgumentError(
      '[evals] fixedApprover(answer, approver): approver must be a non-empty name such as "eval-supervisor"',
    );
  const requests: string[] = [];
  const fn: Approver = (request) => {
    requests.push(request.tool);
    return { decision: answer, approver };
  };
  return Object.assign(fn, { requests });
}
