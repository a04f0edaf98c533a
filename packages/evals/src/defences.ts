import {
  type Approver,
  type Gate,
  InvalidArgumentError,
  type OutputEnvelope,
  type Scanner,
} from "@loopguard/core";
import { createRedactor } from "@loopguard/redact";
import { companyDomain } from "./support-desk/fixtures.js";
import { type SupportVault, supportVault } from "./support-vault.js";

/** A workspace package the scorecard can use when it is installed and built. */
export type OptionalPackage = "policy" | "injection" | "checkpoint" | "tracing-otel";

/** The optional packages that loaded, and why the others did not. */
export interface LoadedPackages {
  /** Module namespaces by package (typed loosely: they are loaded by name at run time). */
  // biome-ignore lint/suspicious/noExplicitAny: modules loaded by name at run time have no static type
  modules: Partial<Record<OptionalPackage, Record<string, any>>>;
  /** Why each missing package could not be loaded. */
  missing: Partial<Record<OptionalPackage, string>>;
}

let loading: Promise<LoadedPackages> | undefined;

/** What each package must export before the scorecard uses it. */
const required: Record<OptionalPackage, readonly string[]> = {
  policy: [
    "policy",
    "allow",
    "ask",
    "deny",
    "argGt",
    "argDomainNotIn",
    "runGuard",
    "killSwitch",
    "fileFreezeStore",
  ],
  injection: ["heuristicScanner", "taintGate", "quarantine"],
  checkpoint: ["jsonlEventStore"],
  "tracing-otel": ["otelExporter"],
};

/**
 * Loads the optional loopguard packages (policy, injection, checkpoint, tracing-otel) by
 * name, once per process. A package that is not installed or not built is reported as
 * missing with the reason, so scenarios that need it are listed as PENDING, never passed.
 */
export function loadPackages(): Promise<LoadedPackages> {
  loading ??= (async () => {
    const result: LoadedPackages = { modules: {}, missing: {} };
    const names: OptionalPackage[] = ["policy", "injection", "checkpoint", "tracing-otel"];
    await Promise.all(
      names.map(async (name) => {
        const specifier = `@loopguard/${name}`;
        try {
          // biome-ignore lint/suspicious/noExplicitAny: modules loaded by name at run time have no static type
          const loaded = (await import(specifier)) as Record<string, any>;
          const absent = required[name].filter((key) => typeof loaded[key] !== "function");
          if (absent.length > 0)
            result.missing[name] = `${specifier} does not export ${absent.join(", ")} yet`;
          else result.modules[name] = loaded;
        } catch (error) {
          result.missing[name] = `${specifier} is not available yet (${firstLine(error)})`;
        }
      }),
    );
    return result;
  })();
  return loading;
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0]!.slice(0, 160);
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
  | "vault";

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
  /** What is missing and why. */
  missing: string[];
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
 * Pieces whose package has not landed are listed in `missing`.
 */
export function supportDefences(
  packages: LoadedPackages,
  options: SupportDefenceOptions = {},
): SupportDefences {
  if (
    packages === null ||
    typeof packages !== "object" ||
    typeof packages.modules !== "object" ||
    typeof packages.missing !== "object"
  )
    throw new InvalidArgumentError(
      "[evals] supportDefences(packages, options): packages must be what loadPackages() resolves to ({ modules, missing })",
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
  const missing: string[] = [];
  const policyModule = packages.modules.policy;
  const injection = packages.modules.injection;
  if (policyModule) {
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
      gates.push(
        policyModule.runGuard({ irreversibleTools: ["issue_refund"], ...options.runGuard }),
      );
      active.push("run guard");
    }
  } else {
    missing.push(packages.missing.policy ?? "@loopguard/policy is not available");
  }
  let scanner: Scanner | undefined;
  let envelope: OutputEnvelope | undefined;
  if (injection) {
    envelope = quarantineEnvelope(injection);
    active.push("quarantine envelope");
    if (!sabotage.has("taint_gate")) {
      // Provenance (issue 14): the refund's order and the email's recipient must come from the
      // task or a trusted tool, whatever the scanner said; with the sealed envelope, detection
      // taints only the flagged spans.
      const sealed = typeof (envelope as { verify?: unknown }).verify === "function";
      gates.push(
        injection.taintGate({
          ...(sealed ? { envelope } : {}),
          sinks: [
            { tool: "send_email", args: ["to"], require: "trusted" },
            { tool: "issue_refund", args: ["order_id"], require: "trusted" },
          ],
        }),
      );
      active.push("taint gate (with provenance)");
    }
    if (!sabotage.has("scanner")) {
      const recommended = typeof injection.defaultScanner === "function";
      scanner = recommended ? injection.defaultScanner() : injection.heuristicScanner();
      active.push(recommended ? "default scanner (rules + learned)" : "heuristic scanner");
    }
  } else {
    missing.push(packages.missing.injection ?? "@loopguard/injection is not available");
  }
  const redactor = sabotage.has("redaction") ? (value: unknown) => value : createRedactor();
  if (!sabotage.has("redaction")) active.push("redaction");
  const vault = sabotage.has("vault") ? undefined : supportVault();
  if (vault) active.push("PII vault");
  return {
    gates,
    ...(vault ? { vault } : {}),
    ...(scanner ? { scanner } : {}),
    ...(envelope ? { envelope } : {}),
    redact: redactor,
    active,
    missing,
  };
}

/**
 * The quarantine envelope of `@loopguard/injection`: `quarantine` is either the envelope
 * itself (text, provenance, scan) or a factory of one.
 */
// biome-ignore lint/suspicious/noExplicitAny: modules loaded by name at run time have no static type
function quarantineEnvelope(injection: Record<string, any>): OutputEnvelope {
  const quarantine = injection.quarantine as (...args: unknown[]) => unknown;
  const probe = (candidate: unknown): candidate is OutputEnvelope => {
    if (typeof candidate !== "function") return false;
    try {
      return typeof candidate("probe", { source: "tool_output" }, undefined) === "string";
    } catch {
      return false;
    }
  };
  if (quarantine.length <= 1) {
    try {
      const made = quarantine();
      if (probe(made)) return made;
    } catch {
      // Not a factory without options: try it as the envelope.
    }
  }
  if (probe(quarantine)) return quarantine as OutputEnvelope;
  throw new InvalidArgumentError(
    "[evals] @loopguard/injection's quarantine is neither an envelope (text, provenance, scan) => string nor a factory of one",
  );
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
