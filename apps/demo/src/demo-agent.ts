import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import {
  type Agent,
  createAgent,
  type EventStore,
  type Gate,
  type Model,
  type StoredEvent,
} from "@loopguard/core";
import { sleep } from "@loopguard/core/plugin";
import {
  crashAfter,
  gullibleModel,
  type LoadedPackages,
  loadPackages,
  type SideEffectLedger,
  type SupportDesk,
  sideEffectLedger,
  supportDefences,
  supportDesk,
} from "@loopguard/evals";
import { fileFreezeStore } from "@loopguard/policy/node";
import { runVault } from "./run-vault.js";

/** Where the CLI keeps its state. */
export interface DemoPaths {
  /** The runs directory (the event store). */
  runs: string;
  /** The outside world's ledger of refunds and emails. */
  ledger: string;
  /** The fleet freeze file. */
  freeze: string;
  /** Per-run PII vault files (0700 directory, 0600 files), outside the event log. */
  vault: string;
}

/** Paths derived from `--dir` (default `.loopguard/runs`). */
export function demoPaths(dir: string): DemoPaths {
  const runs = resolve(dir);
  return {
    runs,
    ledger: join(dirname(runs), "ledger.jsonl"),
    freeze: join(dirname(runs), "freeze.json"),
    vault: join(dirname(runs), "vault"),
  };
}

/** The ledger of the demo's outside world, kept in a file so it survives a crash. */
export function persistentLedger(file: string): SideEffectLedger {
  const ledger = sideEffectLedger();
  if (existsSync(file)) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const effect = JSON.parse(line) as {
        kind: "refund" | "email";
        idempotencyKey: string;
        payload: Record<string, unknown>;
      };
      ledger.record(effect.kind, effect.idempotencyKey, effect.payload);
    }
  }
  const record = ledger.record.bind(ledger);
  return Object.assign(Object.create(ledger) as SideEffectLedger, {
    record: (kind: "refund" | "email", key: string, payload: Record<string, unknown>) => {
      const outcome = record(kind, key, payload);
      if (!outcome.duplicate) appendJsonLine(file, { kind, idempotencyKey: key, payload });
      return outcome;
    },
  });
}

/** Appends one JSON line to a file and fsyncs it (the ledger of the demo's outside world). */
export function appendJsonLine(file: string, value: unknown): void {
  appendFileSync(file, `${JSON.stringify(value)}\n`, { mode: 0o600 });
  const fd = openSync(file, "r+");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A new run id in the agent's own format (`run_` and 16 hex digits). */
export function newRunId(): string {
  return `run_${randomBytes(8).toString("hex")}`;
}

/** Options of the demo agent. */
export interface DemoAgentOptions {
  paths: DemoPaths;
  /**
   * The run this agent will start, resume or approve: its PII vault is loaded from (and
   * saved to) `<vault>/<runId>.jsonl`. Without it the agent has no vault (read-only commands).
   */
  runId?: string;
  /** Latency of each model step in ms, as a real model has (default 0). */
  stepDelayMs?: number;
  /**
   * Awaited before each model step (after `stepDelayMs`): `loopguard demo --step` waits for
   * Enter here, so a person (or a test) decides when the agent moves on.
   */
  beforeStep?: (step: number) => Promise<void>;
  /** The order of the demo's complaint. Default `A1001`; `A1002` ($649) needs an approval. */
  orderId?: string;
  /** The run's budget. Default $0.50, 15 steps, 2 minutes. */
  budget?: { maxUsd?: number; maxSteps?: number; wallClockMs?: number };
  /** Kill the process right after this many durable appends. */
  crashAfter?: number;
  onEvent?: (event: StoredEvent) => void;
  /** Called just before a simulated crash kills the process. */
  onCrash?: () => void;
}

/** The demo's agent, its workload and what defended it. */
export interface DemoAgent {
  agent: Agent;
  /** The same agent on another store (the worker's fenced view); no vault. */
  withStore(store: EventStore): Agent;
  desk: SupportDesk;
  store: EventStore;
  packages: LoadedPackages;
  active: string[];
}

/**
 * Builds the support-desk agent of the demo: the gullible scripted model on the poisoned help
 * article, with every defence, a durable store under the runs directory, a
 * file-backed side-effect ledger and durable approvals (answered with `loopguard approve`).
 */
export async function demoAgent(options: DemoAgentOptions): Promise<DemoAgent> {
  const packages = await loadPackages();
  mkdirSync(options.paths.runs, { recursive: true, mode: 0o700 });
  const ledger = persistentLedger(options.paths.ledger);
  const desk = supportDesk({ poisoned: true, ledger });
  const defences = supportDefences(packages);
  const gates: Gate[] = [...defences.gates];
  const policyModule = packages.modules.policy;
  if (policyModule)
    gates.unshift(
      policyModule.killSwitch({
        store: fileFreezeStore({ path: options.paths.freeze }),
      }),
    );
  let store: EventStore = jsonlEventStore({ dir: options.paths.runs });
  if (options.crashAfter !== undefined) {
    store = crashAfter(store, options.crashAfter, () => {
      options.onCrash?.();
      process.kill(process.pid, "SIGKILL");
    });
  }
  const orderId = options.orderId ?? "A1001";
  const vault = options.runId ? runVault(options.paths.vault, options.runId) : undefined;
  const build = (target: EventStore, withVault: boolean) =>
    createAgent({
      model: slowed(gullibleModel({ orderId }), options.stepDelayMs ?? 0, options.beforeStep),
      tools: desk.tools,
      system: desk.system,
      gates,
      ...(defences.scanner ? { scanner: defences.scanner } : {}),
      ...(defences.envelope ? { envelope: defences.envelope } : {}),
      redact: defences.redact,
      ...(vault && withVault ? { vault } : {}),
      store: target,
      budget: options.budget ?? { maxUsd: 0.5, maxSteps: 15, wallClockMs: 120_000 },
      approval: { durable: true },
      retry: { baseDelayMs: 50 },
      agentId: "support-desk",
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    });
  const agent = build(store, true);
  return {
    agent,
    withStore: (target) => build(target, false),
    desk,
    store,
    packages,
    active: [
      ...(policyModule ? ["kill switch"] : []),
      ...defences.active.filter((name) => name !== "PII vault"),
      ...(vault ? ["PII vault (0600 file beside the run)"] : []),
      "jsonl store (@loopguard/checkpoint)",
    ],
  };
}

/**
 * A model whose every step takes `delayMs` (honouring the run's abort signal), then waits for
 * `beforeStep` when given.
 */
function slowed(
  model: Model,
  delayMs: number,
  beforeStep?: (step: number) => Promise<void>,
): Model {
  if (delayMs <= 0 && !beforeStep) return model;
  let step = 0;
  return {
    name: model.name,
    model: model.model,
    create: async (request, options) => {
      step += 1;
      if (delayMs > 0) await sleep(delayMs, options.signal);
      if (beforeStep) await beforeStep(step);
      return model.create(request, options);
    },
  };
}
