import { randomBytes } from "node:crypto";
import type { ApprovalOutcome, Approver } from "./approval.js";
import { readApproverAnswer } from "./approval.js";
import { type BreakerOptions, CircuitBreaker } from "./circuit-breaker.js";
import type { EventStore, StoredEvent, StoredEventInput } from "./contracts/event-store.js";
import type { Exporter } from "./contracts/exporter.js";
import type { AskDecision, DenyDecision, Gate, ToolCall } from "./contracts/gate.js";
import type {
  ErrorClassification,
  Model,
  ModelRequest,
  ModelResponse,
  ToolUseBlock,
} from "./contracts/model.js";
import type { Scanner } from "./contracts/scanner.js";
import { digestOf } from "./digest.js";
import {
  AppendConflictError,
  InvalidArgumentError,
  LoopguardError,
  RunNotFoundError,
} from "./errors.js";
import type { Budget, DecisionRecord, RunEvent, RunStatus } from "./events.js";
import { executeTool, formatToolOutput } from "./execute.js";
import { foldRun, RunFold } from "./fold.js";
import type { JsonValue } from "./json.js";
import { memoryEventStore } from "./memory-event-store.js";
import { type OutputEnvelope, scanOutput } from "./output.js";
import { defaultHaltOn, judgeCall, sortGates } from "./pipeline.js";
import {
  costOf,
  type ModelPrice,
  priceOf,
  promptTokenBound,
  validatePrices,
  worstCaseCost,
} from "./pricing.js";
import {
  backoffDelay,
  classifyError,
  type RetryOptions,
  resolveRetryOptions,
  sleep,
} from "./retry.js";
import type { RunContextInput, RunState } from "./run-state.js";
import { type Span, SpanBuilder } from "./spans.js";
import type { Tool } from "./tool.js";

/** A function that redacts a value for traces, events streamed to the host and logs. */
export type Redactor = (value: unknown) => unknown;

/**
 * Reversible tokenisation of personal data (the vault of `@loopguard/redact`): the model, the
 * log and the traces see `<EMAIL_1>`, a tool gets the real value back at execution time.
 * `tokenize` must give the same token for the same value within a run.
 */
export interface Vault {
  tokenize(text: string): string;
  reveal<T>(value: T): T;
}

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
  /** Where the run's log goes. Default: in memory. */
  store?: EventStore;
  exporters?: readonly Exporter[];
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
  /** Prices of models the built-in table does not know. */
  prices?: Record<string, ModelPrice>;
  retry?: RetryOptions;
  /** Default breaker settings for every tool. */
  breaker?: BreakerOptions;
  /** Attempts for idempotent tools on a transient failure. Default 3. */
  toolRetry?: { maxAttempts?: number; delayMs?: number };
  /** `max_tokens` of each model call. Default: the model's default, else 4096. */
  maxTokens?: number;
  agentId?: string;
  /** Refusal reasons that halt the run. Default `kill_switch` and `policy_indeterminate`. */
  haltOn?: readonly string[];
  /** Redacts spans, streamed events and log lines at write time. */
  redact?: Redactor;
  /**
   * Tokenises personal data in the task and in every tool output before the model or the log
   * sees it, and reveals it in tool arguments at execution time. Keep the vault for the life of
   * the run: a resumed run needs the same vault to reveal earlier tokens.
   */
  vault?: Vault;
  /** Streams every event of the run to the host, after it is durable (redacted). */
  onEvent?: (event: StoredEvent) => void;
  /** Receives errors of exporters, observers and hooks; they never break a run. */
  onError?: (error: unknown, where: string) => void;
  /** Roles and attributes of runs by default. */
  context?: Omit<RunContextInput, "runId">;
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
}

/** A call the pipeline refused. */
export interface BlockedCall {
  tool: string;
  toolUseId: string;
  reason: string;
  message: string;
  decision: DecisionRecord;
}

/** What a run ended with (or parked with). */
export interface RunResult {
  runId: string;
  status: RunStatus;
  /** The final answer, or the partial answer of a stopped run. */
  answer: string;
  /** Why it ended: `end_turn`, `max_tokens`, `refusal`, `budget`, `wall_clock`, `cancelled`, `halted`, `error`. */
  why: string;
  /** The budget limit that stopped it. */
  limit?: "maxSteps" | "maxTokens" | "maxUsd" | "wallClockMs";
  steps: number;
  tokens: { input: number; output: number };
  costUsd: number;
  blocked: BlockedCall[];
  haltReason?: string;
  error?: string;
  /** Set when the run waits on a person. */
  pendingApprovals?: Array<{
    requestId: string;
    tool: string;
    toolUseId: string;
    reason: string;
    message: string;
    expiresAt: number;
  }>;
}

/** An answer to a parked approval. */
export interface ApprovalAnswer {
  decision: "approve" | "deny" | "indeterminate";
  approver?: string;
  note?: string;
  /** Which request; default: the only open one. */
  requestId?: string;
}

/** An agent: runs tasks, resumes them, and answers their approvals. */
export interface Agent {
  run(task: string, options?: RunOptions): Promise<RunResult>;
  resume(
    runId: string,
    options?: { signal?: AbortSignal; pauseSignal?: AbortSignal },
  ): Promise<RunResult>;
  /** Records a person's answer to a parked approval and resumes the run. */
  approve(
    runId: string,
    answer: ApprovalAnswer,
    options?: { resume?: boolean; signal?: AbortSignal; pauseSignal?: AbortSignal },
  ): Promise<RunResult>;
  /** The spans of a stored run. */
  readonly store: EventStore;
  readonly tools: ReadonlyMap<string, Tool<any, any>>;
  /** The digest of every gate's settings (recorded in `run-start`). */
  readonly policyDigest: string;
  /** Flushes and shuts down exporters. */
  shutdown(): Promise<void>;
}

const breakers = new WeakMap<object, Map<string, CircuitBreaker>>();

/**
 * The process-wide breaker of a tool: shared by every run and agent in the process that uses
 * the same tool with the same breaker settings (agents with other settings get their own).
 */
export function breakerOf(tool: Tool<any, any>, options?: BreakerOptions): CircuitBreaker {
  let byOptions = breakers.get(tool);
  if (!byOptions) {
    byOptions = new Map();
    breakers.set(tool, byOptions);
  }
  const key = `${options?.failureThreshold ?? ""}:${options?.cooldownMs ?? ""}:${options?.now ? "clock" : ""}`;
  let breaker = byOptions.get(key);
  if (!breaker) {
    breaker = new CircuitBreaker(options);
    byOptions.set(key, breaker);
  }
  return breaker;
}

class StopRun extends Error {
  constructor(
    readonly why: string,
    readonly limit?: RunResult["limit"],
  ) {
    super(why);
  }
}

/**
 * Creates an agent: the Messages API loop with budgets, retries, the gate pipeline, tool
 * execution with timeouts, a durable log and traces.
 *
 * @example
 * const agent = createAgent({ model: claudeModel(), tools: [lookupOrder, issueRefund], budget: { maxUsd: 0.5 } });
 * const result = await agent.run("Order A1001 arrived broken, refund please");
 */
export function createAgent(options: AgentOptions): Agent {
  const config = validateAgentOptions(options);
  const { model, store } = config;
  const tools = new Map(config.tools.map((item) => [item.name, item]));
  const toolSpecs = config.tools.map((item) => item.spec);
  const gates = sortGates(config.gates);
  const policyDigest = digestOf({
    gates: gates.map((gate) => [gate.name, gate.step, gate.digest?.() ?? null]),
    haltOn: config.haltOn,
  });
  const toolDigest = digestOf(toolSpecs);
  const price = priceOf(model.model, config.prices);
  const retry = resolveRetryOptions(config.retry);
  const maxTokensDefault = config.maxTokens ?? model.defaultMaxTokens ?? 4096;
  const now = config.now ?? Date.now;
  const vault = config.vault;
  const revealOption = vault ? { reveal: (text: string) => vault.reveal(text) } : {};
  const fixedBytes = Buffer.byteLength(
    JSON.stringify({ system: config.system ?? "", tools: toolSpecs }),
  );
  const reportError = (error: unknown, where: string) => {
    try {
      config.onError?.(error, where);
    } catch {
      // onError itself failed: there is nowhere left to report to.
    }
  };

  // When no exporter sends message content, drop it before redaction: it is most of a span.
  const contentWanted = config.exporters.some((exporter) => exporter.captureContent !== false);
  const exportSpans = (spans: Span[]) => {
    if (spans.length === 0 || config.exporters.length === 0) return;
    const shaped = contentWanted ? spans : spans.map(withoutContent);
    const redacted = config.redact
      ? shaped.map((span) => redactSpan(span, config.redact!))
      : shaped;
    for (const exporter of config.exporters) {
      try {
        Promise.resolve(exporter.export(redacted)).then(
          (result) => {
            if (result && result.code === "failed")
              reportError(result.error, `exporter ${exporter.name}`);
          },
          (error) => reportError(error, `exporter ${exporter.name}`),
        );
      } catch (error) {
        reportError(error, `exporter ${exporter.name}`);
      }
    }
  };

  /** Serialises appends of one run, batching events that arrive while a write is in flight. */
  class Writer {
    /** Events waiting to be appended, and one settle callback per `write` call. */
    #queue: StoredEventInput[] = [];
    #waiters: Array<{ resolve: () => void; reject: (error: unknown) => void; last: number }> = [];
    /** Events queued since the writer was made: `last` of a waiter counts in these. */
    #queued = 0;
    #flushing = false;
    #broken: unknown;
    readonly spans: SpanBuilder;
    constructor(
      readonly runId: string,
      readonly fold: { current: RunFold | undefined },
      public nextSeq: number,
    ) {
      this.spans = new SpanBuilder(runId);
    }
    get broken(): unknown {
      return this.#broken;
    }
    /** Resolves once every given event is durable and applied; one promise per call. */
    write(...events: RunEvent[]): Promise<void> {
      if (this.#broken) return Promise.reject(this.#broken);
      for (const event of events) this.#queue.push({ ...event, at: now() } as StoredEventInput);
      this.#queued += events.length;
      const last = this.#queued;
      const done = new Promise<void>((resolve, reject) => {
        this.#waiters.push({ resolve, reject, last });
      });
      if (!this.#flushing) void this.#flush();
      return done;
    }
    async #flush(): Promise<void> {
      this.#flushing = true;
      let appended = this.#queued - this.#queue.length;
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        try {
          if (this.#broken) throw this.#broken;
          const expectedSeq = this.nextSeq;
          await store.append(this.runId, batch, { expectedSeq });
          this.nextSeq = expectedSeq + batch.length;
          for (let index = 0; index < batch.length; index += 1)
            this.#applied({ ...batch[index]!, seq: expectedSeq + index } as StoredEvent);
          appended += batch.length;
          // A write resolves when its last event is in: every write wholly in this batch.
          let settled = 0;
          while (settled < this.#waiters.length && this.#waiters[settled]!.last <= appended)
            settled += 1;
          for (const waiter of this.#waiters.splice(0, settled)) waiter.resolve();
        } catch (error) {
          this.#broken ??= error;
          this.#queue = [];
          for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
        }
      }
      this.#flushing = false;
    }
    #applied(event: StoredEvent): void {
      if (event.type === "run-start")
        this.fold.current = new RunFold(event, `run ${this.runId}`, revealOption);
      else this.fold.current!.apply(event);
      if (config.exporters.length > 0) {
        try {
          exportSpans(this.spans.push(event, this.fold.current?.messages));
        } catch (error) {
          reportError(error, "span builder");
        }
      }
      if (config.onEvent) {
        try {
          config.onEvent((config.redact ? config.redact(event) : event) as StoredEvent);
        } catch (error) {
          reportError(error, "onEvent");
        }
      }
    }
  }

  const resultOf = (fold: RunFold, extra: { error?: string } = {}): RunResult => {
    const state = fold.state;
    const end = fold.end;
    const turn = fold.pendingTurn;
    const pending =
      fold.status === "awaiting_approval" && turn
        ? [...turn.approvals.values()]
            .filter((entry) => !entry.decision && !turn.results.has(entry.request.toolUseId))
            .map(({ request }) => ({
              requestId: request.requestId,
              tool: request.tool,
              toolUseId: request.toolUseId,
              reason: request.reason,
              message: request.message,
              expiresAt: request.expiresAt,
            }))
        : undefined;
    return {
      runId: fold.start.runId,
      status: extra.error && !end ? "failed" : fold.status,
      // The host is trusted: it gets the answer with the vault's tokens revealed; the log keeps tokens.
      answer: config.vault
        ? config.vault.reveal(end?.answer ?? fold.lastAssistantText)
        : (end?.answer ?? fold.lastAssistantText),
      why:
        end?.why ??
        (fold.status === "awaiting_approval"
          ? "awaiting_approval"
          : extra.error
            ? "error"
            : "running"),
      ...(end?.limit ? { limit: end.limit } : {}),
      steps: fold.steps,
      tokens: { input: state.spend.inputTokens, output: state.spend.outputTokens },
      costUsd: fold.committedUsd,
      blocked: state.refusals.map((refusal) => ({
        tool: refusal.tool,
        toolUseId: refusal.toolUseId,
        reason: refusal.reason,
        message: refusal.decision.message ?? "",
        decision: refusal.decision,
      })),
      ...(state.haltReason ? { haltReason: state.haltReason } : {}),
      ...(end?.error ? { error: end.error } : extra.error ? { error: extra.error } : {}),
      ...(pending && pending.length > 0 ? { pendingApprovals: pending } : {}),
    };
  };

  async function drive(
    writer: Writer,
    signal: AbortSignal | undefined,
    pauseSignal?: AbortSignal,
  ): Promise<RunResult> {
    const fold = writer.fold.current!;
    const state = fold.state;
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort(new StopRun("cancelled"));
    if (signal?.aborted) onOuterAbort();
    signal?.addEventListener("abort", onOuterAbort, { once: true });
    const wallClockMs = fold.start.budget.wallClockMs;
    let wallTimer: ReturnType<typeof setTimeout> | undefined;
    if (wallClockMs !== undefined) {
      const remaining = wallClockMs - fold.activeMs(now());
      wallTimer = setTimeout(
        () => controller.abort(new StopRun("wall_clock", "wallClockMs")),
        Math.max(0, remaining),
      );
    }
    const unlisten = state.onHalt((reason, source) => {
      writer.write({ type: "run-halt", reason, source }).catch(() => undefined);
    });
    const runSignal = controller.signal;
    try {
      for (;;) {
        const current = writer.fold.current!;
        if (current.end) return resultOf(current);
        if (pauseSignal?.aborted) return { ...resultOf(current), why: "paused" };
        if (current.pendingTurn) {
          const parked = await runTurn(writer, current, runSignal);
          if (parked) return resultOf(current);
          if (state.halted && !current.pendingTurn) {
            await writer.write({
              type: "run-end",
              status: "halted",
              answer: current.lastAssistantText,
              why: "halted",
              error: `halted: ${state.haltReason}`,
            });
          }
          continue;
        }
        if (runSignal.aborted) throw runSignal.reason;
        if (
          current.lastStopReason !== undefined &&
          current.lastStopReason !== "tool_use" &&
          current.lastStopReason !== "pause_turn"
        ) {
          await endIfFinal(writer);
          continue;
        }
        await modelStep(writer, current, runSignal);
      }
    } catch (error) {
      const current = writer.fold.current!;
      if (writer.broken) {
        const broken = writer.broken;
        const message = AppendConflictError.isInstance(broken)
          ? `${(broken as Error).message} (this process stopped advancing the run)`
          : `[core] the event store failed, so the run stopped before acting: ${(broken as Error)?.message ?? String(broken)}`;
        return resultOf(current, { error: message });
      }
      const stop =
        error instanceof StopRun
          ? error
          : runSignal.reason instanceof StopRun && runSignal.aborted
            ? runSignal.reason
            : undefined;
      try {
        if (stop) {
          await writer.write({
            type: "run-end",
            status: "stopped",
            answer: current.lastAssistantText,
            why: stop.why,
            ...(stop.limit ? { limit: stop.limit } : {}),
          });
        } else {
          const message = LoopguardError.isInstance(error)
            ? (error as Error).message
            : `[core] the run failed unexpectedly: ${(error as Error)?.message ?? String(error)}`;
          if (!LoopguardError.isInstance(error)) reportError(error, "run");
          await writer.write({
            type: "run-end",
            status: "failed",
            answer: current.lastAssistantText,
            why: "error",
            error: message,
          });
        }
      } catch {
        return resultOf(current, { error: String((writer.broken as Error)?.message ?? error) });
      }
      return resultOf(writer.fold.current!);
    } finally {
      clearTimeout(wallTimer);
      signal?.removeEventListener("abort", onOuterAbort);
      unlisten();
      // Spans still open (a parked, paused or stopped-early session) are emitted when the run is
      // resumed or ends, never twice; `loopguard trace` shows them from the log at any time.
      await Promise.all(
        config.exporters.map((exporter) =>
          exporter
            .forceFlush?.()
            .catch((error: unknown) => reportError(error, `exporter ${exporter.name}`)),
        ),
      );
    }
  }

  async function modelStep(writer: Writer, fold: RunFold, signal: AbortSignal): Promise<void> {
    const budget = fold.start.budget;
    const step = fold.steps + 1;
    if (budget.maxSteps !== undefined && fold.steps >= budget.maxSteps)
      throw new StopRun("budget", "maxSteps");
    let maxTokens = fold.start.maxTokens;
    const promptBound = promptTokenBound(
      fixedBytes + fold.messageBytes,
      fold.messages.length,
      fold.knownPrefix && {
        tokens: fold.knownPrefix.tokens,
        bytes: fixedBytes + fold.knownPrefix.bytes,
      },
    );
    if (budget.maxTokens !== undefined) {
      const left =
        budget.maxTokens -
        fold.state.spend.inputTokens -
        fold.state.spend.outputTokens -
        promptBound;
      if (left < 1) throw new StopRun("budget", "maxTokens");
      maxTokens = Math.min(maxTokens, left);
    }
    if (budget.maxUsd !== undefined) {
      const left = budget.maxUsd - fold.committedUsd - worstCaseCost(promptBound, 0, price);
      const band =
        price.longPrompt && promptBound > price.longPrompt.thresholdTokens
          ? price.longPrompt
          : price;
      const affordable = Math.floor((left * 1_000_000) / band.outputPerMTok);
      if (affordable < 1) throw new StopRun("budget", "maxUsd");
      maxTokens = Math.min(maxTokens, affordable);
    }
    const estimateUsd = worstCaseCost(promptBound, maxTokens, price);
    const request: ModelRequest = {
      model: model.model,
      max_tokens: maxTokens,
      ...(config.system ? { system: config.system } : {}),
      messages: fold.messages,
      ...(toolSpecs.length > 0 ? { tools: toolSpecs, tool_choice: { type: "auto" as const } } : {}),
    };
    await writer.write({
      type: "model-request",
      step,
      maxTokens,
      estimateUsd,
      requestDigest: `${fold.chainDigest}:${maxTokens}`,
    });
    let attempt = 0;
    for (;;) {
      attempt += 1;
      const started = performance.now();
      let response: ModelResponse;
      try {
        response = await model.create(request, { signal });
        validateResponse(response);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        const classification = classify(error);
        if (!classification.retryable || attempt >= retry.maxAttempts) {
          const message = describeModelError(error, classification, attempt);
          await writer.write({
            type: "model-error",
            step,
            kind: classification.kind,
            ...(classification.status ? { status: classification.status } : {}),
            message,
            attempts: attempt,
          });
          throw new LoopguardError("model_call_failed", message);
        }
        const waitMs = backoffDelay(attempt, classification, retry);
        if (
          budget.wallClockMs !== undefined &&
          fold.activeMs(now()) + waitMs > budget.wallClockMs
        ) {
          throw new StopRun("wall_clock", "wallClockMs");
        }
        await writer.write({
          type: "model-retry",
          step,
          attempt,
          kind: classification.kind,
          ...(classification.status ? { status: classification.status } : {}),
          waitMs,
          message: shortMessage(error),
        });
        await sleep(waitMs, signal);
        continue;
      }
      const costUsd = costOf(response.usage, price);
      await writer.write({
        type: "model-response",
        step,
        response,
        costUsd,
        latencyMs: Math.round(performance.now() - started),
        attempts: attempt,
      });
      await endIfFinal(writer);
      return;
    }
  }

  /** Ends the run when the last response's stop reason ends it (also after a crash right before run-end). */
  async function endIfFinal(writer: Writer): Promise<void> {
    const fold = writer.fold.current!;
    const answer = fold.lastAssistantText;
    switch (fold.lastStopReason) {
      case undefined:
      case "tool_use":
      case "pause_turn":
        return;
      case "end_turn":
      case "stop_sequence":
        await writer.write({
          type: "run-end",
          status: "completed",
          answer,
          why: fold.lastStopReason,
        });
        return;
      case "max_tokens":
      case "model_context_window_exceeded":
        await writer.write({ type: "run-end", status: "stopped", answer, why: "max_tokens" });
        return;
      case "refusal":
        await writer.write({ type: "run-end", status: "stopped", answer, why: "refusal" });
        return;
      default:
        await writer.write({
          type: "run-end",
          status: "failed",
          answer,
          why: "error",
          error: `[core] the model stopped with an unknown stop_reason ${JSON.stringify(fold.lastStopReason)}`,
        });
    }
  }

  const classify = (error: unknown): ErrorClassification => {
    if (model.classifyError) {
      try {
        return model.classifyError(error);
      } catch (classifyFailure) {
        reportError(classifyFailure, "model.classifyError");
      }
    }
    return classifyError(error);
  };

  /** Runs the pending tool calls of the last turn; returns `true` when the run parks. */
  async function runTurn(writer: Writer, fold: RunFold, signal: AbortSignal): Promise<boolean> {
    const turn = fold.pendingTurn!;
    const state = fold.state;
    const executions: Promise<void>[] = [];
    let parked = false;
    try {
      for (const use of turn.toolUses) {
        if (turn.results.has(use.id)) continue;
        const intent = turn.intents.get(use.id);
        const item = tools.get(use.name);
        if (intent) {
          // Admitted before a crash and never finished: re-run with the same idempotency key.
          executions.push(
            execute(
              writer,
              item!,
              use,
              intent.args as Record<string, unknown>,
              intent.idempotencyKey,
              signal,
            ),
          );
          continue;
        }
        const call: ToolCall = {
          tool: use.name,
          // Gates judge real values (a policy reads the real email domain); the log keeps tokens.
          args: (config.vault ? config.vault.reveal(use.input ?? {}) : (use.input ?? {})) as Record<
            string,
            unknown
          >,
          toolUseId: use.id,
          idempotencyKey: `${state.runId}:${use.id}`,
          sensitive: item?.sensitive ?? false,
          idempotent: item?.idempotent ?? false,
          run: state,
          ...(turn.approvals.has(use.id) ? { recheck: true } : {}),
        };
        if (typeof use.input !== "object" || use.input === null || Array.isArray(use.input)) {
          call.args = { __invalid_input__: use.input as JsonValue };
        }
        const judgement = await judgeCall({
          call,
          tool: item,
          gates,
          haltOn: config.haltOn,
          approve: (ask, _passed) => approvalFor(writer, fold, call, ask, signal),
          budget: () => toolBudget(fold, item),
          ...(item ? { breaker: breakerOf(item, config.breaker) } : {}),
          onError: reportError,
        });
        if (judgement.type === "park") {
          parked = true;
          continue;
        }
        if (judgement.type === "deny") {
          await writer.write({
            type: "tool-call-refusal",
            step: turn.step,
            toolUseId: use.id,
            tool: use.name,
            decision: judgement.record,
            content: refusalText(judgement.record),
          });
          observe(call, "refused", judgement.record.reason, 0);
          continue;
        }
        const args = judgement.args as Record<string, JsonValue>;
        await writer.write({
          type: "tool-call-intent",
          step: turn.step,
          toolUseId: use.id,
          tool: use.name,
          args: config.vault ? tokenizeDeep(args, config.vault) : args,
          argsDigest: digestOf(args),
          idempotencyKey: call.idempotencyKey,
          decision: judgement.record,
          ...(item!.costUsd > 0 ? { costUsd: item!.costUsd } : {}),
        });
        executions.push(execute(writer, item!, use, args, call.idempotencyKey, signal, call));
      }
    } finally {
      // Calls already started must settle before the turn ends, even when a later write of
      // this turn failed: their own failures surface below, never as unhandled rejections.
      const settled = await Promise.allSettled(executions);
      const failed = settled.find(
        (outcome): outcome is PromiseRejectedResult => outcome.status === "rejected",
      );
      if (failed) throw failed.reason;
    }
    return parked && writer.fold.current!.pendingTurn !== undefined;
  }

  function observe(
    call: ToolCall,
    status: "ok" | "error" | "refused",
    reason: string | undefined,
    durationMs: number,
  ): void {
    for (const gate of gates) {
      if (!gate.observe) continue;
      Promise.resolve()
        .then(() => gate.observe!({ call, status, ...(reason ? { reason } : {}), durationMs }))
        .catch((error) => reportError(error, `gate ${gate.name} observe`));
    }
  }

  async function execute(
    writer: Writer,
    item: Tool<any, any>,
    use: ToolUseBlock,
    args: Record<string, unknown>,
    idempotencyKey: string,
    signal: AbortSignal,
    call?: ToolCall,
  ): Promise<void> {
    const fold = writer.fold.current!;
    const step = fold.pendingTurn?.step ?? fold.steps;
    const breaker = breakerOf(item, config.breaker);
    const result = await executeTool(
      item,
      config.vault ? config.vault.reveal(args) : args,
      { idempotencyKey, runId: fold.start.runId, agentId: fold.start.agentId, toolUseId: use.id },
      {
        signal,
        ...(config.toolRetry.maxAttempts ? { maxAttempts: config.toolRetry.maxAttempts } : {}),
        ...(config.toolRetry.delayMs !== undefined
          ? { retryDelayMs: config.toolRetry.delayMs }
          : {}),
      },
    );
    if (result.status === "ok") breaker.onSuccess();
    else if (result.errorKind !== "aborted") breaker.onFailure();
    else breaker.release();
    if (result.status === "ok") {
      const raw = formatToolOutput(result.value);
      const text = config.vault ? config.vault.tokenize(raw) : raw;
      // Without a scanner or an envelope, step 7 leaves the text as it is: skip its promise.
      const { content, scan } =
        config.scanner || config.envelope
          ? await scanOutput(
              text,
              {
                source: "tool_output",
                tool: item.name,
                toolUseId: use.id,
                runId: fold.start.runId,
              },
              config.scanner,
              config.envelope,
              reportError,
            )
          : { content: text, scan: undefined };
      await writer.write({
        type: "tool-call-result",
        step,
        toolUseId: use.id,
        tool: item.name,
        status: "ok",
        content,
        isError: false,
        durationMs: Math.round(result.durationMs),
        attempts: result.attempts,
        ...(scan ? { scan } : {}),
      });
    } else {
      await writer.write({
        type: "tool-call-result",
        step,
        toolUseId: use.id,
        tool: item.name,
        status: "error",
        content: `Error (${result.errorKind}): ${result.message}`,
        isError: true,
        durationMs: Math.round(result.durationMs),
        attempts: result.attempts,
        errorKind: result.errorKind,
      });
    }
    if (call)
      observe(
        call,
        result.status,
        result.status === "error" ? result.errorKind : undefined,
        result.durationMs,
      );
  }

  function toolBudget(fold: RunFold, item: Tool<any, any> | undefined): DenyDecision | undefined {
    const max = fold.start.budget.maxUsd;
    if (!item || max === undefined || item.costUsd === 0) return undefined;
    if (fold.committedUsd + item.costUsd > max) {
      return {
        type: "deny",
        reason: "budget_exceeded",
        message: `This call costs $${item.costUsd.toFixed(4)} and the run has $${Math.max(0, max - fold.committedUsd).toFixed(4)} left of its $${max} budget.`,
        fixHints: ["Finish with what you have; tell the user the budget ran out."],
      };
    }
    return undefined;
  }

  async function approvalFor(
    writer: Writer,
    fold: RunFold,
    call: ToolCall,
    ask: AskDecision,
    signal: AbortSignal,
  ): Promise<ApprovalOutcome> {
    const turn = fold.pendingTurn!;
    const existing = turn.approvals.get(call.toolUseId);
    const argsDigest = digestOf(call.args);
    if (existing?.decision) {
      const { decision, request } = existing;
      const answered = {
        ...(decision.approver ? { approver: decision.approver } : {}),
        ...(decision.note ? { note: decision.note } : {}),
      };
      switch (decision.decision) {
        case "approve":
          if (request.argsDigest !== argsDigest || request.policyDigest !== policyDigest)
            return { type: "deny", why: "stale", ...answered };
          return { type: "approve", ...answered };
        case "deny":
          return { type: "deny", why: "denied", ...answered };
        case "timeout":
          return { type: "deny", why: "timeout" };
        case "expired":
          return { type: "deny", why: "expired" };
        case "no_approver":
          return { type: "deny", why: "no_approver" };
        default:
          return {
            type: "indeterminate",
            note: decision.note ?? "the recorded answer could not be read",
          };
      }
    }
    const request =
      existing?.request ??
      ({
        type: "approval-request",
        step: turn.step,
        requestId: `apr_${randomBytes(8).toString("hex")}`,
        toolUseId: call.toolUseId,
        tool: call.tool,
        argsDigest,
        policyDigest,
        reason: ask.reason,
        message: ask.message,
        expiresAt: now() + config.approval.ttlMs,
      } as const);
    if (!existing) await writer.write(request);
    if (config.approval.durable) return { type: "park" };
    const record = async (outcome: ApprovalOutcome): Promise<ApprovalOutcome> => {
      const decision =
        outcome.type === "approve"
          ? "approve"
          : outcome.type === "deny"
            ? outcome.why === "denied"
              ? "deny"
              : outcome.why === "stale"
                ? "deny"
                : outcome.why
            : "indeterminate";
      await writer.write({
        type: "approval-decision",
        requestId: request.requestId,
        toolUseId: call.toolUseId,
        decision,
        ...("approver" in outcome && outcome.approver ? { approver: outcome.approver } : {}),
        ...("note" in outcome && outcome.note ? { note: outcome.note } : {}),
      });
      return outcome;
    };
    if (!config.approver) return record({ type: "deny", why: "no_approver" });
    const timeout = new AbortController();
    const onAbort = () => timeout.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const answer = await Promise.race([
        Promise.resolve().then(() =>
          config.approver!(
            {
              requestId: request.requestId,
              runId: fold.start.runId,
              agentId: fold.start.agentId,
              tool: call.tool,
              args: call.args,
              toolUseId: call.toolUseId,
              reason: ask.reason,
              message: ask.message,
              argsDigest,
              policyDigest,
              expiresAt: request.expiresAt,
              ...(ask.details ? { details: ask.details } : {}),
            },
            { signal: timeout.signal },
          ),
        ),
        new Promise<symbol>((resolve) => {
          timer = setTimeout(() => resolve(timedOut), config.approval.timeoutMs);
        }),
      ]);
      if (signal.aborted) throw signal.reason;
      if (answer === timedOut) {
        timeout.abort(new Error("approval timed out"));
        return record({ type: "deny", why: "timeout" });
      }
      return record(readApproverAnswer(answer));
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      reportError(error, "approver");
      return record({ type: "indeterminate", note: `the approver failed: ${shortMessage(error)}` });
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    }
  }

  async function open(runId: string): Promise<{ writer: Writer; events: StoredEvent[] }> {
    if (typeof runId !== "string" || runId.trim() === "")
      throw new InvalidArgumentError("[core] resume(runId): runId must be a non-empty string");
    const events = await store.read(runId);
    if (events.length === 0) throw new RunNotFoundError(runId, `the ${store.name} event store`);
    const where = `run ${runId} (${store.name} store)`;
    if (config.exporters.length === 0) {
      return {
        writer: new Writer(runId, { current: foldRun(events, where, revealOption) }, events.length),
        events,
      };
    }
    // Replay the log into the span builder too, so spans left open by the last process end
    // (and are exported once) when this one appends its run-resume.
    const fold = new RunFold(events[0]!, where, revealOption);
    const writer = new Writer(runId, { current: fold }, events.length);
    writer.spans.push(events[0]!, fold.messages);
    for (let index = 1; index < events.length; index += 1) {
      fold.apply(events[index]!);
      writer.spans.push(events[index]!, fold.messages);
    }
    return { writer, events };
  }

  const agent: Agent = {
    store,
    tools,
    policyDigest,
    async run(task, runOptions = {}) {
      if (typeof task !== "string" || task.trim() === "") {
        throw new InvalidArgumentError(
          "[core] agent.run(task): task must be a non-empty string describing what the agent should do",
        );
      }
      const runId = runOptions.runId ?? `run_${randomBytes(8).toString("hex")}`;
      if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(runId)) {
        throw new InvalidArgumentError(
          `[core] runId ${JSON.stringify(runId)} is invalid: use 1 to 128 letters, digits, "_", ".", ":" or "-"`,
        );
      }
      const context = { ...config.context, ...runOptions.context };
      const roles = context.roles ? [...context.roles] : [];
      const writer = new Writer(runId, { current: undefined }, 0);
      await writer.write({
        type: "run-start",
        runId,
        agentId: config.agentId,
        task: config.vault ? config.vault.tokenize(task) : task,
        model: model.model,
        ...(config.system ? { system: config.system } : {}),
        maxTokens: maxTokensDefault,
        budget: config.budget,
        policyDigest,
        toolDigest,
        context: { roles, ...(context.attributes ?? {}) } as Record<string, JsonValue>,
      });
      return drive(writer, runOptions.signal, runOptions.pauseSignal);
    },
    async resume(runId, resumeOptions = {}) {
      const { writer } = await open(runId);
      const fold = writer.fold.current!;
      if (fold.end || fold.status === "awaiting_approval") return resultOf(fold);
      await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
      return drive(writer, resumeOptions.signal, resumeOptions.pauseSignal);
    },
    async approve(runId, answer, approveOptions = {}) {
      if (!answer || !["approve", "deny", "indeterminate"].includes(answer.decision)) {
        throw new InvalidArgumentError(
          `[core] approve(${runId}, answer): answer.decision must be "approve", "deny" or "indeterminate", got ${JSON.stringify(answer?.decision)}`,
        );
      }
      const { writer } = await open(runId);
      const fold = writer.fold.current!;
      const turn = fold.pendingTurn;
      const open_ = turn
        ? [...turn.approvals.values()].filter(
            (entry) => !entry.decision && !turn.results.has(entry.request.toolUseId),
          )
        : [];
      if (fold.end || open_.length === 0) {
        throw new LoopguardError(
          "no_pending_approval",
          `[core] run ${runId} has no approval waiting (status ${fold.status}); nothing to answer`,
        );
      }
      const target = answer.requestId
        ? open_.find((entry) => entry.request.requestId === answer.requestId)
        : open_.length === 1
          ? open_[0]
          : undefined;
      if (!target) {
        throw new LoopguardError(
          "ambiguous_approval",
          `[core] run ${runId} has ${open_.length} open approvals (${open_.map((entry) => entry.request.requestId).join(", ")}); pass requestId to say which one${answer.requestId ? `: ${answer.requestId} is not one of them` : ""}`,
        );
      }
      const expired = now() > target.request.expiresAt;
      await writer.write({
        type: "approval-decision",
        requestId: target.request.requestId,
        toolUseId: target.request.toolUseId,
        decision: expired ? "expired" : answer.decision,
        ...(answer.approver ? { approver: answer.approver } : {}),
        ...(answer.note ? { note: answer.note } : {}),
      });
      if (approveOptions.resume === false || writer.fold.current!.status === "awaiting_approval")
        return resultOf(writer.fold.current!);
      await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
      return drive(writer, approveOptions.signal, approveOptions.pauseSignal);
    },
    async shutdown() {
      await Promise.all(
        config.exporters.map(async (exporter) => {
          try {
            await exporter.forceFlush?.();
            await exporter.shutdown();
          } catch (error) {
            reportError(error, `exporter ${exporter.name}`);
          }
        }),
      );
    },
  };
  return agent;
}

const timedOut = Symbol("timed out");

/** Tokenises every string of a JSON value with the vault (for what the log records). */
function tokenizeDeep<T>(value: T, vault: Vault): T {
  if (typeof value === "string") return vault.tokenize(value) as T;
  if (Array.isArray(value)) return value.map((item) => tokenizeDeep(item, vault)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = tokenizeDeep(item, vault);
    return out as T;
  }
  return value;
}

function refusalText(record: DecisionRecord): string {
  const hints =
    record.fixHints && record.fixHints.length > 0
      ? ` What to do: ${record.fixHints.join(" ")}`
      : "";
  return `Refused (${record.reason}) at step ${record.refusedAt}: ${record.message ?? "the call was not allowed."}${hints}`;
}

function shortMessage(error: unknown): string {
  // The SDK's message embeds the raw JSON body; the API's own message inside it reads better.
  const body = (error as { error?: { error?: { type?: unknown; message?: unknown } } } | undefined)
    ?.error?.error;
  const status = (error as { status?: unknown } | undefined)?.status;
  const message =
    body && typeof body.message === "string"
      ? `${typeof status === "number" ? `${status} ` : ""}${typeof body.type === "string" ? `${body.type}: ` : ""}${body.message}`
      : error instanceof Error
        ? error.message
        : String(error);
  return message.length > 300 ? `${message.slice(0, 297)}...` : message;
}

function describeModelError(
  error: unknown,
  classification: ErrorClassification,
  attempts: number,
): string {
  const what: Record<string, string> = {
    bad_request:
      "the request was rejected as invalid (400); check the model id, tools and messages",
    authentication: "the API key was rejected (401); set a valid ANTHROPIC_API_KEY",
    permission: "the API key may not use this model or feature (403)",
    not_found: "the model or endpoint was not found (404); check the model id",
    request_too_large: "the request is too large (413); shorten the conversation or tool outputs",
    malformed_response: "the model's reply was malformed",
  };
  const base =
    what[classification.kind] ??
    `the model call failed (${classification.kind}${classification.status ? ` ${classification.status}` : ""})`;
  return `[core] ${base} after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${shortMessage(error)}`;
}

class MalformedResponseError extends LoopguardError {
  readonly status = undefined;
  constructor(message: string) {
    super("malformed_response", `[core] malformed model response: ${message}`);
  }
}

function validateResponse(response: unknown): asserts response is ModelResponse {
  if (!response || typeof response !== "object")
    throw new MalformedResponseError("expected an object");
  const record = response as Record<string, unknown>;
  if (!Array.isArray(record.content))
    throw new MalformedResponseError("content must be an array of blocks");
  for (const [index, block] of (record.content as unknown[]).entries()) {
    if (
      !block ||
      typeof block !== "object" ||
      typeof (block as { type?: unknown }).type !== "string"
    ) {
      throw new MalformedResponseError(`content[${index}] has no type`);
    }
    const typed = block as Record<string, unknown>;
    if (
      typed.type === "tool_use" &&
      (typeof typed.id !== "string" || typeof typed.name !== "string")
    ) {
      throw new MalformedResponseError(`content[${index}] is a tool_use without an id or name`);
    }
  }
  const usage = record.usage as Record<string, unknown> | undefined;
  if (!usage || typeof usage.input_tokens !== "number" || typeof usage.output_tokens !== "number") {
    throw new MalformedResponseError("usage.input_tokens and usage.output_tokens must be numbers");
  }
}

function withoutContent(span: Span): Span {
  const { content: _content, ...rest } = span;
  return rest;
}

function redactSpan(span: Span, redact: Redactor): Span {
  try {
    return redact(span) as Span;
  } catch {
    // A redactor that fails must not leak: drop content and string attributes.
    const attributes: Span["attributes"] = {};
    for (const [key, value] of Object.entries(span.attributes))
      if (typeof value !== "string") attributes[key] = value;
    return { ...span, attributes, events: [], content: {} };
  }
}

interface ResolvedAgentOptions {
  model: Model;
  tools: readonly Tool<any, any>[];
  system: string | undefined;
  gates: readonly Gate[];
  scanner: Scanner | undefined;
  envelope: OutputEnvelope | undefined;
  store: EventStore;
  exporters: readonly Exporter[];
  approver: Approver | undefined;
  approval: { timeoutMs: number; ttlMs: number; durable: boolean };
  budget: Budget;
  prices: Record<string, ModelPrice>;
  retry: RetryOptions | undefined;
  breaker: BreakerOptions | undefined;
  toolRetry: { maxAttempts?: number; delayMs?: number };
  maxTokens: number | undefined;
  agentId: string;
  haltOn: readonly string[];
  redact: Redactor | undefined;
  vault: Vault | undefined;
  onEvent: AgentOptions["onEvent"];
  onError: AgentOptions["onError"];
  context: Omit<RunContextInput, "runId">;
  now: (() => number) | undefined;
}

function validateAgentOptions(options: AgentOptions): ResolvedAgentOptions {
  const fail = (message: string): never => {
    throw new InvalidArgumentError(`[core] createAgent: ${message}`);
  };
  if (!options || typeof options !== "object")
    fail("options must be an object with at least { model, tools }");
  const model = options.model;
  if (!model || typeof model.create !== "function" || typeof model.model !== "string") {
    fail(
      "model must implement the Model contract ({ name, model, create(request, { signal }) }); use claudeModel() or scriptedModel([...])",
    );
  }
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
  }
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
    approver: options.approver,
    approval,
    budget,
    prices,
    retry: options.retry,
    breaker: options.breaker,
    toolRetry: options.toolRetry ?? {},
    maxTokens: options.maxTokens,
    agentId,
    haltOn: options.haltOn ?? defaultHaltOn,
    redact: options.redact,
    vault: options.vault,
    onEvent: options.onEvent,
    onError: options.onError,
    context: options.context ?? {},
    now: options.now,
  };
}

export type { RunState };
