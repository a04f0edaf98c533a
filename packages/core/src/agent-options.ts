import type { Approver } from "./approval.js";
import type { ChildRunner } from "./child-runner.js";
import type { BreakerOptions } from "./circuit-breaker.js";
import {
  type ContextWindowOptions,
  type ResolvedContextWindow,
  validateContextWindow,
} from "./context-window-options.js";
import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { Exporter } from "./contracts/exporter.js";
import type { Gate } from "./contracts/gate.js";
import type { Model } from "./contracts/model.js";
import type { Redactor } from "./contracts/redactor.js";
import type { RunBudget } from "./contracts/run-budget.js";
import type { Scanner } from "./contracts/scanner.js";
import type { Vault } from "./contracts/vault.js";
import { InvalidArgumentError } from "./errors.js";
import type { Budget } from "./events.js";
import { type ExportQueueOptions, validateExportQueueOptions } from "./export-queue.js";
import { memoryEventStore } from "./memory-event-store.js";
import type { OutputEnvelope } from "./output.js";
import { defaultMaxOutputChars, minOutputChars } from "./output-limit.js";
import { defaultHaltOn, stepOrder } from "./pipeline.js";
import { type ModelPrice, priceOf, validatePrices } from "./pricing.js";
import type { RetryOptions } from "./retry.js";
import { validateRunBudgets } from "./run-budgets.js";
import type { RunContextInput } from "./run-state.js";
import { defaultShutdownDeadlineMs } from "./run-telemetry.js";
import type { Tool } from "./tool.js";

/** Everything an agent is made of. */
export interface AgentOptions {
  /** The model: `claudeModel()` live, `scriptedModel([...])` offline. */
  model: Model;
  tools: readonly Tool<any, any>[];
  system?: string;
  /** Gates of the pipeline (policy, RunGuard, taint, ...); ordered by their step. */
  gates?: readonly Gate[];
  /** Scans every tool output (step 7). */
  scanner?: Scanner;
  /** Wraps every tool output before the model sees it (the quarantine envelope). */
  envelope?: OutputEnvelope;
  /**
   * Where the run's log goes. Default: `memoryEventStore()`, which keeps the logs of unfinished
   * runs and of the last 100 finished ones and loses everything on a restart (the agent says so
   * once, through `onError` or `console.warn`). Give a durable store in production.
   */
  store?: EventStore;
  exporters?: readonly Exporter[];
  /**
   * Each exporter's background queue: runs never wait for an exporter; spans wait in a bounded
   * queue (dropped and counted past it), one send at a time, and an exporter that failed its last
   * `breakAfter` sends is skipped until a probe succeeds. Drops are reported to `onError`. The
   * queue belongs to the exporter object: the first agent (or `withRun`) that uses it sets these.
   */
  exportQueue?: ExportQueueOptions;
  /**
   * How long `agent.shutdown()` may take to send what is queued and flush the exporters; what is
   * left after it is dropped and reported. Default 10 000 ms.
   */
  shutdownDeadlineMs?: number;
  /**
   * The most characters of one tool output the model sees (a tool's own `maxOutputChars` wins).
   * A longer output is cut to its head and tail with a marker saying how much was cut. Default
   * 100 000 (about 25,000 tokens: an eighth of a 200k context window, so a few such outputs and
   * the conversation still fit).
   */
  maxOutputChars?: number;
  /**
   * What `tool-call-result` keeps of an output that was cut: `"digest"` (default) the text the
   * model saw plus `cut: { chars, sha256 }` of the whole output; `"full"` also the whole output
   * (tokenised by the vault; `onEvent` gets it too) in `fullOutput`.
   */
  outputLog?: "digest" | "full";
  /** Answers `ask` decisions. Without one, an `ask` is a deny (unless approvals are durable). */
  approver?: Approver;
  approval?: {
    /** How long an inline approver may take. Default 5 minutes. */
    timeoutMs?: number;
    /** How long an approval request stays valid. Default 24 hours. */
    ttlMs?: number;
    /** Park the run as `awaiting_approval` instead of asking inline; answer with `agent.approve`. */
    durable?: boolean;
  };
  budget?: Budget;
  /**
   * Budgets over many runs (a tenant's day: `tenantBudget` from `@loopguard/policy`), asked at
   * run start and before each model step; they fail closed (see the RunBudget contract).
   */
  budgets?: readonly RunBudget[];
  /** Prices of models the built-in table does not know. */
  prices?: Record<string, ModelPrice>;
  retry?: RetryOptions;
  /** Default breaker settings for every tool. */
  breaker?: BreakerOptions;
  /** Attempts for idempotent tools on a transient failure. Default 3. */
  toolRetry?: { maxAttempts?: number; delayMs?: number };
  /** `max_tokens` of each model call. Default: the model's default, else 4096. */
  maxTokens?: number;
  /**
   * Keeps long runs inside the model's context window: clears older tool results and/or
   * compacts older turns into a summary past a share of the window, as logged events (a resumed
   * run sends the same bytes). Without it the conversation grows until the API refuses it.
   */
  contextWindow?: ContextWindowOptions;
  agentId?: string;
  /** Refusal reasons that halt the run. Default `kill_switch` and `policy_indeterminate`. */
  haltOn?: readonly string[];
  /**
   * Redacts spans, streamed events and log lines at write time, e.g. `createRedactor()` from
   * `@loopguard/redact`. Required when an exporter declares `captureContent: true` (and does
   * not redact content itself); `false` is the explicit way to export raw content.
   */
  redact?: Redactor | false;
  /**
   * Tokenises personal data in the task and in every tool output before the model or the log
   * sees it, and reveals it in tool arguments at execution time. Keep the vault for the life of
   * the run: a resumed run needs the same vault to reveal earlier tokens.
   */
  vault?: Vault;
  /** Streams every event of the run to the host, after it is durable (redacted). */
  onEvent?: (event: StoredEvent) => void;
  /**
   * Aborts and retries a model stream that sends nothing for this long (the idle watchdog).
   * Default 60 000.
   */
  idleTimeoutMs?: number;
  /**
   * Characters of streamed text held back so a value split across two deltas is tokenised or
   * redacted whole before `agent.stream()` shows it (only when `vault`, `redact` or
   * `redactStream` is set). Default 64; see `createDeltaFilter` for the bound.
   */
  streamHoldBack?: number;
  /**
   * A streaming redactor for `agent.stream()`'s text, e.g.
   * `() => createRedactionStream({ holdBack: 256 })` from `@loopguard/redact`; one per block.
   */
  redactStream?: () => TransformStream<string, string>;
  /**
   * The most runs this agent advances at once (`run`, `stream`, `resume`, `approve`); the
   * others wait in a queue, by `priority`, then first come first served, and report their wait
   * (`result.queueWaitMs`, the run span's `loopguard.queue_wait_ms`). Default: 64 per CPU the
   * runtime reports (`navigator.hardwareConcurrency`, else `os.availableParallelism()` on Node,
   * else 4), at least 64.
   */
  maxConcurrentRuns?: number;
  /** Receives errors of exporters, observers and hooks; they never break a run. */
  onError?: (error: unknown, where: string) => void;
  /** Roles and attributes of runs by default. */
  context?: Omit<RunContextInput, "runId">;
  /**
   * How deep a tree of runs this agent may start through `asTool` tools (its children are 1,
   * their children 2, ...). Default 3; checked when the agent is made, and again for every
   * child run (a deeper child is refused with `child_refused`).
   */
  maxDepth?: number;
  /**
   * Where the child runs of this agent's `asTool` tools run. Default: in this process, inside
   * the parent's call. A worker plugs in its own (e.g. a job per child) and parks the parent
   * as `awaiting_child`; see `ChildRunner`.
   */
  childRunner?: ChildRunner;
  /** The clock, for tests. */
  now?: () => number;
}

/** Options of one run. */
export interface RunOptions {
  runId?: string;
  /** Cancels the run: in-flight calls are aborted and the run ends as `stopped` (`cancelled`). */
  signal?: AbortSignal;
  /**
   * Pauses the run at the next step boundary without ending it (in-flight calls finish first):
   * the result has status `running` and why `paused`; `resume` continues it. Workers use this
   * to advance a run for a bounded slice of time.
   */
  pauseSignal?: AbortSignal;
  context?: Omit<RunContextInput, "runId">;
  /**
   * Where the run waits when the agent already advances `maxConcurrentRuns` runs: higher first
   * (an integer from -1,000,000 to 1,000,000), first come first served within one. Default 0.
   */
  priority?: number;
}

/** Agent options checked, with their defaults filled in. */
export interface ResolvedAgentOptions {
  model: Model;
  tools: readonly Tool<any, any>[];
  system: string | undefined;
  gates: readonly Gate[];
  scanner: Scanner | undefined;
  envelope: OutputEnvelope | undefined;
  store: EventStore;
  exporters: readonly Exporter[];
  exportQueue: ExportQueueOptions | undefined;
  shutdownDeadlineMs: number;
  maxOutputChars: number;
  outputLog: "digest" | "full";
  approver: Approver | undefined;
  approval: { timeoutMs: number; ttlMs: number; durable: boolean };
  budget: Budget;
  budgets: readonly RunBudget[];
  prices: Record<string, ModelPrice>;
  retry: RetryOptions | undefined;
  breaker: BreakerOptions | undefined;
  toolRetry: { maxAttempts?: number; delayMs?: number };
  maxTokens: number | undefined;
  contextWindow: ResolvedContextWindow | undefined;
  agentId: string;
  haltOn: readonly string[];
  redact: Redactor | undefined;
  vault: Vault | undefined;
  onEvent: AgentOptions["onEvent"];
  onError: AgentOptions["onError"];
  idleTimeoutMs: number;
  streamHoldBack: number;
  redactStream: AgentOptions["redactStream"];
  context: Omit<RunContextInput, "runId">;
  maxDepth: number;
  childRunner: ChildRunner | undefined;
  now: (() => number) | undefined;
}

/** Checks `createAgent`'s options; throws `InvalidArgumentError` saying what is wrong and how to fix it. */
export function validateAgentOptions(options: AgentOptions): ResolvedAgentOptions {
  // Name the agent (at the end) when it has a usable id: in a tree of agents-as-tools, the
  // error says which one.
  const named =
    typeof options?.agentId === "string" && /^[A-Za-z0-9_.:-]{1,64}$/.test(options.agentId)
      ? ` (agent "${options.agentId}")`
      : "";
  const fail = (message: string): never => {
    throw new InvalidArgumentError(`[core] createAgent: ${message}${named}`);
  };
  if (!options || typeof options !== "object")
    fail("options must be an object with at least { model, tools }");
  const model = options.model;
  if (!model || typeof model.create !== "function" || typeof model.model !== "string") {
    fail(
      "model must implement the Model contract ({ name, model, create(request, { signal }) }); use claudeModel() or scriptedModel([...])",
    );
  }
  const gates = checkToolsAndGates(options, fail);
  const budget = options.budget ?? {};
  for (const key of ["maxSteps", "maxTokens", "maxUsd", "wallClockMs"] as const) {
    const value = budget[key];
    if (
      value !== undefined &&
      (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    ) {
      fail(`budget.${key} must be a positive number, got ${JSON.stringify(value)}`);
    }
  }
  if (budget.maxSteps !== undefined && !Number.isInteger(budget.maxSteps))
    fail(`budget.maxSteps must be an integer, got ${budget.maxSteps}`);
  const prices = validatePrices(options.prices);
  priceOf(model.model, prices);
  if (
    options.maxTokens !== undefined &&
    (!Number.isInteger(options.maxTokens) || options.maxTokens < 1)
  )
    fail(`maxTokens must be a positive integer, got ${options.maxTokens}`);
  const approval = {
    timeoutMs: options.approval?.timeoutMs ?? 300_000,
    ttlMs: options.approval?.ttlMs ?? 86_400_000,
    durable: options.approval?.durable ?? false,
  };
  if (!(approval.timeoutMs > 0) || !(approval.ttlMs > 0))
    fail("approval.timeoutMs and approval.ttlMs must be positive numbers of milliseconds");
  if (
    options.vault !== undefined &&
    (typeof options.vault?.tokenize !== "function" || typeof options.vault?.reveal !== "function")
  ) {
    fail(
      "vault must have tokenize(text) and reveal(value), e.g. createVault() from @loopguard/redact",
    );
  }
  if (options.approver !== undefined && typeof options.approver !== "function")
    fail("approver must be a function (request) => 'approve' | 'deny' | { decision, approver }");
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  if (typeof idleTimeoutMs !== "number" || !Number.isFinite(idleTimeoutMs) || idleTimeoutMs <= 0)
    fail(
      `idleTimeoutMs must be a positive number of milliseconds (default 60000), got ${JSON.stringify(options.idleTimeoutMs)}`,
    );
  const streamHoldBack = options.streamHoldBack ?? 64;
  if (!Number.isInteger(streamHoldBack) || streamHoldBack < 0)
    fail(
      `streamHoldBack must be a non-negative integer number of characters (default 64), got ${JSON.stringify(options.streamHoldBack)}`,
    );
  if (options.redactStream !== undefined && typeof options.redactStream !== "function")
    fail(
      "redactStream must be a function returning a TransformStream<string, string>, e.g. () => createRedactionStream()",
    );
  if (
    options.redact !== undefined &&
    options.redact !== false &&
    typeof options.redact !== "function"
  )
    fail(
      "redact must be a function (value) => redacted value, e.g. createRedactor() from @loopguard/redact, or false to export raw content on purpose",
    );
  checkContentLeaves(options, fail);
  try {
    validateExportQueueOptions(options.exportQueue, "[core] createAgent");
  } catch (error) {
    fail((error as Error).message.replace("[core] createAgent: ", ""));
  }
  const shutdownDeadlineMs = options.shutdownDeadlineMs ?? defaultShutdownDeadlineMs;
  if (!Number.isInteger(shutdownDeadlineMs) || shutdownDeadlineMs < 0)
    fail(
      `shutdownDeadlineMs must be a non-negative integer number of milliseconds (default ${defaultShutdownDeadlineMs}), got ${JSON.stringify(options.shutdownDeadlineMs)}`,
    );
  const maxOutputChars = options.maxOutputChars ?? defaultMaxOutputChars;
  if (!Number.isInteger(maxOutputChars) || maxOutputChars < minOutputChars)
    fail(
      `maxOutputChars must be an integer of at least ${minOutputChars} (default ${defaultMaxOutputChars}), got ${JSON.stringify(options.maxOutputChars)}`,
    );
  const outputLog = options.outputLog ?? "digest";
  if (outputLog !== "digest" && outputLog !== "full")
    fail(`outputLog must be "digest" or "full", got ${JSON.stringify(options.outputLog)}`);
  const maxDepth = options.maxDepth ?? 3;
  if (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > 16)
    fail(
      `maxDepth must be an integer from 1 to 16 (default 3), got ${JSON.stringify(options.maxDepth)}`,
    );
  if (
    options.childRunner !== undefined &&
    (typeof options.childRunner !== "object" ||
      options.childRunner === null ||
      typeof options.childRunner.run !== "function")
  )
    fail("childRunner must be an object with run(request, control), e.g. a worker's job runner");
  const agentId = options.agentId ?? "agent";
  if (typeof agentId !== "string" || !/^[A-Za-z0-9_.:-]{1,64}$/.test(agentId))
    fail(
      `agentId ${JSON.stringify(agentId)} is invalid: use 1 to 64 letters, digits, "_", ".", ":" or "-"`,
    );
  return {
    model,
    tools: options.tools,
    system: options.system,
    gates,
    scanner: options.scanner,
    envelope: options.envelope,
    store: options.store ?? memoryEventStore(),
    exporters: options.exporters ?? [],
    exportQueue: options.exportQueue,
    shutdownDeadlineMs,
    maxOutputChars,
    outputLog,
    approver: options.approver,
    approval,
    budget,
    budgets: validateRunBudgets(options.budgets),
    prices,
    retry: options.retry,
    breaker: options.breaker,
    toolRetry: options.toolRetry ?? {},
    maxTokens: options.maxTokens,
    contextWindow: validateContextWindow(options.contextWindow, model, prices),
    agentId,
    haltOn: options.haltOn ?? defaultHaltOn,
    redact: options.redact === false ? undefined : options.redact,
    vault: options.vault,
    onEvent: options.onEvent,
    onError: options.onError,
    idleTimeoutMs,
    streamHoldBack,
    redactStream: options.redactStream,
    context: options.context ?? {},
    maxDepth,
    childRunner: options.childRunner,
    now: options.now,
  };
}

/** The tools (unique names) and the gates (each with name, step and check). */
function checkToolsAndGates(
  options: AgentOptions,
  fail: (message: string) => never,
): readonly Gate[] {
  if (!Array.isArray(options.tools))
    fail("tools must be an array of tools made with tool({ ... })");
  const names = new Set<string>();
  for (const [index, item] of options.tools.entries()) {
    if (!item || typeof item.parse !== "function" || !item.spec)
      fail(
        `tools[${index}] is not a tool; declare it with tool({ name, description, input, run })`,
      );
    if (names.has(item.name)) fail(`two tools are named "${item.name}"; tool names must be unique`);
    names.add(item.name);
  }
  const gates = options.gates ?? [];
  if (!Array.isArray(gates)) fail("gates must be an array");
  for (const [index, gate] of gates.entries()) {
    if (
      !gate ||
      typeof gate.check !== "function" ||
      typeof gate.name !== "string" ||
      typeof gate.step !== "string"
    ) {
      fail(`gates[${index}] is not a gate: it needs name, step and check(call)`);
    }
    if (!stepOrder.includes(gate.step))
      fail(
        `gates[${index}] ("${gate.name}") has step ${JSON.stringify(gate.step)}, which is not a pipeline step: use one of ${stepOrder.map((step) => `"${step}"`).join(", ")} (a gate at an unknown step would never run)`,
      );
  }
  return gates;
}

/** Safe by default: message content leaves the process only redacted, unless the host says otherwise with redact: false. */
function checkContentLeaves(options: AgentOptions, fail: (message: string) => never): void {
  if (options.redact === undefined) {
    for (const exporter of options.exporters ?? []) {
      if (exporter?.captureContent === true && exporter.redactsContent !== true)
        fail(
          `exporter "${String(exporter.name)}" captures message content but the agent has no redact: pass redact: createRedactor() from @loopguard/redact (or redact: false to export raw content on purpose)`,
        );
    }
  }
}
