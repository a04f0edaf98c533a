import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  type Agent,
  createAgent,
  type EventStore,
  type Gate,
  type StoredEvent,
} from "@loopguard/core";
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
import { appendJsonLine, jsonlFileStore } from "./jsonl-file-store.js";

/** Where the CLI keeps its state. */
export interface DemoPaths {
  /** The runs directory (the event store). */
  runs: string;
  /** The outside world's ledger of refunds and emails. */
  ledger: string;
  /** The fleet freeze file. */
  freeze: string;
}

/** Paths derived from `--dir` (default `.loopguard/runs`). */
export function demoPaths(dir: string): DemoPaths {
  const runs = resolve(dir);
  return {
    runs,
    ledger: join(dirname(runs), "ledger.jsonl"),
    freeze: join(dirname(runs), "freeze.json"),
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

/** Options of the demo agent. */
export interface DemoAgentOptions {
  paths: DemoPaths;
  /** The order of the demo's complaint. Default `A1001`; `A1002` ($649) needs an approval. */
  orderId?: string;
  /** Kill the process right after this many durable appends. */
  crashAfter?: number;
  onEvent?: (event: StoredEvent) => void;
  /** Called just before a simulated crash kills the process. */
  onCrash?: () => void;
}

/** The demo's agent, its workload and what defended it. */
export interface DemoAgent {
  agent: Agent;
  desk: SupportDesk;
  store: EventStore;
  packages: LoadedPackages;
  active: string[];
  missing: string[];
}

/**
 * Builds the support-desk agent of the demo: the gullible scripted model on the poisoned help
 * article, with every defence that has landed, a durable store under the runs directory, a
 * file-backed side-effect ledger and durable approvals (answered with `loopguard approve`).
 */
export async function demoAgent(options: DemoAgentOptions): Promise<DemoAgent> {
  const packages = await loadPackages();
  mkdirSync(options.paths.runs, { recursive: true });
  const ledger = persistentLedger(options.paths.ledger);
  const desk = supportDesk({ poisoned: true, ledger });
  const defences = supportDefences(packages);
  const gates: Gate[] = [...defences.gates];
  const policyModule = packages.modules.policy;
  if (policyModule)
    gates.unshift(
      policyModule.killSwitch({
        store: policyModule.fileFreezeStore({ path: options.paths.freeze }),
      }),
    );
  const checkpoint = packages.modules.checkpoint;
  let store: EventStore = checkpoint
    ? checkpoint.jsonlEventStore({ dir: options.paths.runs })
    : jsonlFileStore(options.paths.runs);
  if (options.crashAfter !== undefined) {
    store = crashAfter(store, options.crashAfter, () => {
      options.onCrash?.();
      process.kill(process.pid, "SIGKILL");
    });
  }
  const orderId = options.orderId ?? "A1001";
  const agent = createAgent({
    model: gullibleModel({ orderId }),
    tools: desk.tools,
    system: desk.system,
    gates,
    ...(defences.scanner ? { scanner: defences.scanner } : {}),
    ...(defences.envelope ? { envelope: defences.envelope } : {}),
    redact: defences.redact,
    store,
    budget: { maxUsd: 0.5, maxSteps: 15, wallClockMs: 120_000 },
    approval: { durable: true },
    retry: { baseDelayMs: 50 },
    agentId: "support-desk",
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  return {
    agent,
    desk,
    store,
    packages,
    active: [
      ...(policyModule ? ["kill switch"] : []),
      ...defences.active,
      checkpoint ? "jsonl store (@loopguard/checkpoint)" : "jsonl store (CLI fallback)",
    ],
    missing: defences.missing,
  };
}
