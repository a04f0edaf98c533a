import {
  type Agent,
  type AgentOptions,
  createAgent,
  type EventStore,
  InvalidArgumentError,
  type RetryOptions,
} from "@loopguard/core";
import { recordingExporter } from "@loopguard/core/testing";
import type {
  LoadedPackages,
  Sabotage,
  SupportDefenceOptions,
  SupportDefences,
} from "./defences.js";
import { supportDefences } from "./defences.js";
import { type ObservedSurfaces, observedSurfaces } from "./observed-surfaces.js";
import {
  type SupportDesk,
  type SupportDeskOptions,
  supportDesk,
} from "./support-desk/support-desk.js";

/** What a scenario is about. */
export type ScenarioCategory =
  | "happy_path"
  | "injection"
  | "approval"
  | "budget"
  | "faults"
  | "durability"
  | "observability"
  | "run_guard"
  | "delegation";

/** The name and place of a scenario in the scorecard. */
export interface ScenarioMeta {
  /** snake_case, unique. */
  name: string;
  category: ScenarioCategory;
  /** One line saying what it proves. */
  title: string;
  /** The loopguard packages it exercises besides core (documentation; all are dependencies). */
  requires?: readonly ("policy" | "injection" | "checkpoint" | "tracing-otel")[];
  /** Why it cannot run against a live model (it needs scripted control); absent when it can. */
  notLive?: string;
}

const scenarioCategories: readonly ScenarioCategory[] = [
  "happy_path",
  "injection",
  "approval",
  "budget",
  "faults",
  "durability",
  "observability",
  "run_guard",
  "delegation",
];

/** One named check of a scenario. */
export interface Check {
  name: string;
  ok: boolean;
  detail?: string;
}

/** What a scenario function gets. */
export interface ScenarioContext {
  /** Records a check; returns `ok` so it can guard what follows. */
  check(name: string, ok: boolean, detail?: string): boolean;
  /** The optional packages that loaded. */
  readonly packages: LoadedPackages;
  /** Defences switched off on purpose (by the tests that prove the scorecard can fail). */
  readonly sabotage: readonly Sabotage[];
  /** The support desk's defences from what has loaded, minus any sabotage. */
  defences(options?: SupportDefenceOptions): SupportDefences;
  /** A support desk whose sensitive strings join the leak scan. */
  desk(options?: SupportDeskOptions): SupportDesk;
  /**
   * Creates an agent wired into the scenario's observation: a recording exporter, the event
   * stream, errors and its store are scanned for leaks when the scenario ends.
   */
  agent(options: AgentOptions): Agent;
  /** Writes a log line (redacted like the host's logs); scanned for leaks too. */
  log(line: string): void;
  /** Fast retry settings so the suite stays within its time budget. */
  readonly retry: RetryOptions;
  /** The model factory: scripted offline, `claudeModel()` in live mode. */
  readonly live: boolean;
  /** Everything observed so far (for scenario-specific checks). */
  readonly observed: ObservedSurfaces;
}

/** A scenario of the scorecard. */
export interface Scenario extends ScenarioMeta {
  run(context: ScenarioContext): Promise<void> | void;
}

/**
 * Declares a scenario: a named story on the support-desk workload whose function records
 * checks with `context.check(name, ok, detail)`. The runner adds a global check that no
 * customer PII or secret reached a trace, an exported span, the event stream or a log.
 *
 * @example
 * export const refundHappyPath = scenario(
 *   { name: "refund_happy_path", category: "happy_path", title: "A damaged order is refunded once" },
 *   async (t) => {
 *     const desk = t.desk();
 *     const result = await t.agent({ model: gullibleModel(), tools: desk.tools }).run("Refund A1001");
 *     t.check("completed", result.status === "completed", result.status);
 *   },
 * );
 */
export function scenario(
  meta: ScenarioMeta,
  run: (context: ScenarioContext) => Promise<void> | void,
): Scenario {
  if (!meta || typeof meta.name !== "string" || !/^[a-z][a-z0-9_]*$/.test(meta.name)) {
    throw new InvalidArgumentError(
      `[evals] scenario(meta, fn): meta.name must be snake_case, got ${JSON.stringify(meta?.name)}`,
    );
  }
  if (!scenarioCategories.includes(meta.category))
    throw new InvalidArgumentError(
      `[evals] scenario ${meta.name}: category must be one of ${scenarioCategories.join(", ")}, got ${JSON.stringify(meta.category)}`,
    );
  if (
    meta.requires !== undefined &&
    (!Array.isArray(meta.requires) ||
      meta.requires.some(
        (name) => !["policy", "injection", "checkpoint", "tracing-otel"].includes(name),
      ))
  )
    throw new InvalidArgumentError(
      `[evals] scenario ${meta.name}: requires must be an array of "policy", "injection", "checkpoint" or "tracing-otel", got ${JSON.stringify(meta.requires)}`,
    );
  if (typeof meta.title !== "string" || meta.title.trim() === "")
    throw new InvalidArgumentError(`[evals] scenario ${meta.name}: give it a one-line title`);
  if (typeof run !== "function")
    throw new InvalidArgumentError(
      `[evals] scenario ${meta.name}: fn must be a function (context) => void`,
    );
  return Object.freeze({ ...meta, run });
}

/** Builds the context a scenario runs in; the runner owns it. */
export function createScenarioContext(input: {
  packages: LoadedPackages;
  sabotage: readonly Sabotage[];
  live: boolean;
}): { context: ScenarioContext; checks: Check[]; surfaces: ObservedSurfaces } {
  const checks: Check[] = [];
  const surfaces = observedSurfaces();
  let defaultRedact: ((value: unknown) => unknown) | undefined;
  const defences = (options: SupportDefenceOptions = {}) => {
    const built = supportDefences(input.packages, {
      ...options,
      sabotage: [...input.sabotage, ...(options.sabotage ?? [])],
    });
    defaultRedact ??= built.redact;
    return built;
  };
  const redactor = () => {
    defaultRedact ??= defences().redact;
    return defaultRedact;
  };
  const context: ScenarioContext = {
    check(name, ok, detail) {
      checks.push({ name, ok: Boolean(ok), ...(detail !== undefined ? { detail } : {}) });
      return Boolean(ok);
    },
    packages: input.packages,
    sabotage: input.sabotage,
    live: input.live,
    retry: { baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 5, maxAttempts: 4 },
    defences,
    desk(options = {}) {
      const desk = supportDesk(options);
      if (input.sabotage.includes("idempotency_keys")) breakIdempotency(desk);
      surfaces.sensitive.push(...desk.fixtures.sensitiveStrings);
      return desk;
    },
    agent(options) {
      const exporter = recordingExporter();
      surfaces.exporters.push(exporter);
      const redact = options.redact || redactor();
      const store = options.store ? watchStore(options.store, surfaces) : undefined;
      const agent = createAgent({
        ...options,
        ...(store ? { store } : {}),
        redact,
        exporters: [...(options.exporters ?? []), exporter],
        onEvent: (event) => {
          surfaces.events.push(event);
          options.onEvent?.(event);
        },
        onError: (error, where) => {
          surfaces.logs.push(
            String(
              redact(`[error] ${where}: ${error instanceof Error ? error.message : String(error)}`),
            ),
          );
          options.onError?.(error, where);
        },
      });
      if (!store)
        surfaces.stores.push({ store: agent.store, runIds: new Set(), all: true, redact });
      else surfaces.stores.at(-1)!.redact = redact;
      return agent;
    },
    log(line) {
      surfaces.logs.push(String(redactor()(line)));
    },
    observed: surfaces,
  };
  return { context, checks, surfaces };
}

function watchStore(store: EventStore, surfaces: ObservedSurfaces): EventStore {
  const entry = { store, runIds: new Set<string>(), all: false, redact: (value: unknown) => value };
  surfaces.stores.push(entry);
  return {
    name: store.name,
    append(runId, events, options) {
      entry.runIds.add(runId);
      return store.append(runId, events, options);
    },
    read: (runId) => store.read(runId),
    list: (filter) => store.list(filter),
    ...(store.close ? { close: () => store.close!() } : {}),
  };
}

/** The sabotage `idempotency_keys`: the payment and mail APIs forget keys, so a re-run pays twice. */
function breakIdempotency(desk: SupportDesk): void {
  const record = desk.ledger.record.bind(desk.ledger);
  let counter = 0;
  (desk.ledger as { record: typeof record }).record = (kind, key, payload) => {
    counter += 1;
    return record(kind, `${key}#${counter}`, payload);
  };
}
