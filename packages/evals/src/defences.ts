import type { Approver, Gate, OutputEnvelope, Scanner } from "@loopguard/core";
import { createRedactor } from "@loopguard/redact";
import { companyDomain } from "./support-desk/fixtures.js";

/** A workspace package the scorecard can use when it is installed and built. */
export type OptionalPackage = "policy" | "injection" | "checkpoint" | "tracing-otel";

/** The optional packages that loaded, and why the others did not. */
export interface LoadedPackages {
  /** Module namespaces by package (typed loosely: they are loaded by name at run time). */
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
  injection: ["heuristicScanner", "taintGate"],
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
  | "run_guard";

/** The support desk's defences, built from whatever packages have loaded. */
export interface SupportDefences {
  gates: Gate[];
  scanner?: Scanner;
  envelope?: OutputEnvelope;
  redact: (value: unknown) => unknown;
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
 * the heuristic scanner with the quarantine envelope, and redaction of every trace and log.
 * Pieces whose package has not landed are listed in `missing`.
 */
export function supportDefences(
  packages: LoadedPackages,
  options: SupportDefenceOptions = {},
): SupportDefences {
  const sabotage = new Set(options.sabotage ?? []);
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
    if (!sabotage.has("taint_gate")) {
      gates.push(injection.taintGate());
      active.push("taint gate");
    }
    if (!sabotage.has("scanner")) {
      scanner = injection.heuristicScanner();
      active.push("heuristic scanner");
    }
    const quarantine = injection.quarantineEnvelope ?? injection.quarantine;
    if (typeof quarantine === "function") {
      envelope = quarantine();
      active.push("quarantine envelope");
    }
  } else {
    missing.push(packages.missing.injection ?? "@loopguard/injection is not available");
  }
  const redactor = sabotage.has("redaction") ? (value: unknown) => value : createRedactor();
  if (!sabotage.has("redaction")) active.push("redaction");
  return {
    gates,
    ...(scanner ? { scanner } : {}),
    ...(envelope ? { envelope } : {}),
    redact: redactor,
    active,
    missing,
  };
}

/** An approver that answers every request the same way, recording who asked. */
export function fixedApprover(
  answer: "approve" | "deny",
  approver = "eval-supervisor",
): Approver & { requests: string[] } {
  const requests: string[] = [];
  const fn: Approver = (request) => {
    requests.push(request.tool);
    return { decision: answer, approver };
  };
  return Object.assign(fn, { requests });
}
