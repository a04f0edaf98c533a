import { randomBytes } from "node:crypto";
import {
  type AgentOptions,
  type ResolvedAgentOptions,
  type RunOptions,
  validateAgentOptions,
} from "./agent-options.js";
import {
  type AgentStream,
  type AgentStreamOptions,
  type AgentStreamSink,
  createAgentStream,
  streamEventsOf,
} from "./agent-stream.js";
import type { EventStore } from "./contracts/event-store.js";
import { digestOf } from "./digest.js";
import {
  AmbiguousApprovalError,
  AppendConflictError,
  InvalidArgumentError,
  LoopguardError,
  NoPendingApprovalError,
  RunNotFoundError,
} from "./errors.js";
import { guardRunModel } from "./fold.js";
import { foldLog } from "./fold-stream.js";
import type { JsonValue } from "./json.js";
import { endIfFinal, type ModelStepContext, modelStep } from "./model-step.js";
import { policyDigestOf, sortGates } from "./pipeline.js";
import { priceOf } from "./pricing.js";
import { resolveRetryOptions } from "./retry.js";
import { RunBudgetStop, RunBudgetUnavailableError, runBudgetHooks } from "./run-budgets.js";
import { withRunLease } from "./run-lease.js";
import { failedStartResult, type RunResult, resultOf } from "./run-result.js";
import { Telemetry } from "./run-telemetry.js";
import { RunWriter, type RunWriterOptions } from "./run-writer.js";
import type { SpanBuilder } from "./spans.js";
import { StopRun } from "./stop-run.js";
import type { Tool } from "./tool.js";
import { ToolCallPath } from "./tool-call.js";
import { runToolTurn, type ToolTurnContext } from "./tool-turn.js";

// The option and result types live beside their code; these names stay importable from here.
export type { AgentOptions, RunOptions } from "./agent-options.js";
export { breakerOf } from "./breakers.js";
export type { Redactor } from "./contracts/redactor.js";
export type { Vault } from "./contracts/vault.js";
export type { BlockedCall, RunResult } from "./run-result.js";
export type { RunState } from "./run-state.js";

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
  /**
   * Runs a task like `run`, streaming what happens as it happens: text deltas (through the
   * vault and redaction), complete tool calls, decisions, tool results, step ends, resets of a
   * step that failed mid-stream, and the run's end. `result` is what `run` would return.
   */
  stream(task: string, options?: RunOptions & AgentStreamOptions): AgentStream;
  /**
   * Resumes a stored run like `resume`, streaming what happens from here on (events already in
   * the log are not replayed). After `approve(runId, answer, { resume: false })`, this is how a
   * chat UI shows the run continue.
   */
  resumeStream(
    runId: string,
    options?: { signal?: AbortSignal; pauseSignal?: AbortSignal } & AgentStreamOptions,
  ): AgentStream;
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
  /**
   * Sends the spans still queued, then flushes and shuts down the exporters, within
   * `deadlineMs` (default: the agent's `shutdownDeadlineMs`, 10 000); what is left by then is
   * dropped and reported to `onError`. Runs never wait for exporters; this is where flushing
   * waits. Never throws; safe to call twice.
   */
  shutdown(options?: { deadlineMs?: number }): Promise<void>;
}

/** Everything the loop of one agent needs, fixed when the agent is made. */
interface LoopContext extends ModelStepContext, ToolTurnContext {
  config: ResolvedAgentOptions;
  store: EventStore;
  telemetry: Telemetry;
  policyDigest: string;
  toolDigest: string;
  maxTokensDefault: number;
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
  const loop = loopContext(validateAgentOptions(options));
  return {
    store: loop.store,
    tools: loop.tools,
    policyDigest: loop.policyDigest,
    async run(task, runOptions = {}) {
      const options = {
        ...runOptions,
        runId: runOptions.runId ?? `run_${randomBytes(8).toString("hex")}`,
      };
      let writer: RunWriter;
      try {
        writer = await startRun(loop, task, options);
      } catch (error) {
        if (InvalidArgumentError.isInstance(error)) throw error;
        // The store could not record the run-start: the run never started (no log is left
        // `running`); a result, not a throw, like every other way a run can fail.
        return failedStartResult(options.runId, error);
      }
      return drive(loop, writer, runOptions.signal, runOptions.pauseSignal);
    },
    stream(task, streamOptions = {}) {
      const options = {
        ...streamOptions,
        runId: streamOptions.runId ?? `run_${randomBytes(8).toString("hex")}`,
      };
      return createAgentStream(
        async (sink) => {
          let writer: RunWriter;
          try {
            writer = await startRun(loop, task, options, sink);
          } catch (error) {
            if (InvalidArgumentError.isInstance(error)) throw error;
            return failedStartResult(options.runId, error);
          }
          const result = await drive(loop, writer, options.signal, options.pauseSignal, sink);
          endStream(loop, writer, result, sink);
          return result;
        },
        { thinking: streamOptions.thinking === true },
      );
    },
    resumeStream(runId, resumeOptions = {}) {
      return createAgentStream(
        (sink) =>
          withRunLease(
            loop.store,
            runId,
            async () => {
              const writer = await open(loop, runId, sink);
              const fold = writer.fold;
              if (fold.end || fold.status === "awaiting_approval") {
                // Nothing to run: the host still gets its run-end.
                const result = resultOf(fold, loop.vault);
                endStream(loop, writer, result, sink, true);
                return result;
              }
              await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
              const result = await drive(
                loop,
                writer,
                resumeOptions.signal,
                resumeOptions.pauseSignal,
                sink,
              );
              endStream(loop, writer, result, sink);
              return result;
            },
            loop.reportError,
          ),
        { thinking: resumeOptions.thinking === true },
      );
    },
    resume(runId, resumeOptions = {}) {
      // One owner per resume: the store's lease (where it has one) is held throughout.
      return withRunLease(
        loop.store,
        runId,
        async () => {
          const writer = await open(loop, runId);
          const fold = writer.fold;
          if (fold.end || fold.status === "awaiting_approval") return resultOf(fold, loop.vault);
          await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
          return drive(loop, writer, resumeOptions.signal, resumeOptions.pauseSignal);
        },
        loop.reportError,
      );
    },
    async approve(runId, answer, approveOptions = {}) {
      if (!answer || !["approve", "deny", "indeterminate"].includes(answer.decision)) {
        throw new InvalidArgumentError(
          `[core] approve(${runId}, answer): answer.decision must be "approve", "deny" or "indeterminate", got ${JSON.stringify(answer?.decision)}`,
        );
      }
      return withRunLease(
        loop.store,
        runId,
        async () => {
          const writer = await open(loop, runId);
          await recordAnswer(writer, answer, loop.now);
          // A guarded run has no loop to drive: the answer waits for the identical call.
          if (
            approveOptions.resume === false ||
            writer.fold.status === "awaiting_approval" ||
            writer.fold.start.model === guardRunModel
          )
            return resultOf(writer.fold, loop.vault);
          await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
          return drive(loop, writer, approveOptions.signal, approveOptions.pauseSignal);
        },
        loop.reportError,
      );
    },
    shutdown: (shutdownOptions) =>
      loop.telemetry.shutdown(shutdownOptions?.deadlineMs ?? loop.config.shutdownDeadlineMs),
  };
}

function loopContext(config: ResolvedAgentOptions): LoopContext {
  const { model } = config;
  const gates = sortGates(config.gates);
  const policyDigest = policyDigestOf(gates, config.haltOn);
  const toolSpecs = config.tools.map((item) => item.spec);
  const now = config.now ?? Date.now;
  const reportError = (error: unknown, where: string) => {
    try {
      config.onError?.(error, where);
    } catch {
      // onError itself failed: there is nowhere left to report to.
    }
  };
  return {
    config,
    store: config.store,
    model,
    price: priceOf(model.model, config.prices),
    system: config.system,
    toolSpecs,
    fixedBytes: Buffer.byteLength(
      JSON.stringify({ system: config.system ?? "", tools: toolSpecs }),
    ),
    retry: resolveRetryOptions(config.retry),
    runBudgets: runBudgetHooks(config.budgets, config.store, now),
    now,
    reportError,
    tools: new Map(config.tools.map((item) => [item.name, item])),
    vault: config.vault,
    path: new ToolCallPath({
      gates,
      haltOn: config.haltOn,
      policyDigest,
      approval: { approver: config.approver, ...config.approval },
      breaker: config.breaker,
      scanner: config.scanner,
      envelope: config.envelope,
      vault: config.vault,
      toolRetry: config.toolRetry,
      maxOutputChars: config.maxOutputChars,
      outputLog: config.outputLog,
      now,
      reportError,
    }),
    telemetry: new Telemetry({
      exporters: config.exporters,
      redact: config.redact,
      onEvent: config.onEvent,
      reportError,
      queue: config.exportQueue,
    }),
    policyDigest,
    toolDigest: digestOf(toolSpecs),
    maxTokensDefault: config.maxTokens ?? model.defaultMaxTokens ?? 4096,
    streaming: streamingSettings(config),
  };
}

/**
 * Closes a host stream whose run wrote no `run-end` in this session (it parked on an approval,
 * paused, or had ended before): the host still gets one `run-end`, tokenised and redacted as
 * the log's answers are.
 */
function endStream(
  loop: LoopContext,
  writer: RunWriter,
  result: RunResult,
  sink: AgentStreamSink,
  always = false,
): void {
  const fold = writer.fold;
  if (fold.end && !always) return;
  const answer = fold.end?.answer ?? fold.lastAssistantText;
  const redact = loop.config.redact;
  sink.push({
    type: "run-end",
    runId: writer.runId,
    status: result.status,
    answer: redact ? String(redact(answer)) : answer,
  });
}

/** What streamed text passes through before the host sees it: the vault, then the redactor. */
function streamingSettings(config: ResolvedAgentOptions): ModelStepContext["streaming"] {
  const { vault, redact } = config;
  const transforms: Array<(text: string) => string> = [];
  if (vault) transforms.push((text) => vault.tokenize(text));
  if (redact)
    transforms.push((text) => {
      const out = redact(text);
      return typeof out === "string" ? out : String(out);
    });
  return {
    idleTimeoutMs: config.idleTimeoutMs,
    holdBack: config.streamHoldBack,
    transforms,
    redactStream: config.redactStream,
    redact,
  };
}

function writerOptions(
  loop: LoopContext,
  runId: string,
  sink?: AgentStreamSink,
): { options: RunWriterOptions; spans: SpanBuilder | undefined } {
  const telemetry = loop.telemetry.forRun(runId);
  const vault = loop.vault;
  const applied = telemetry.onApplied;
  const redact = loop.config.redact;
  // The host's stream gets the durable events it shows (decisions, results, step ends).
  const onApplied: NonNullable<RunWriterOptions["onApplied"]> = sink
    ? (event, fold) => {
        applied(event, fold);
        try {
          for (const streamed of streamEventsOf(runId, event, redact)) sink.push(streamed);
        } catch (error) {
          loop.reportError(error, "agent.stream");
        }
      }
    : applied;
  return {
    spans: telemetry.spans,
    options: {
      now: loop.now,
      ...(vault ? { reveal: (text: string) => vault.reveal(text) } : {}),
      onApplied,
    },
  };
}

/** Checks the task, writes the run's `run-start` and returns its writer. */
async function startRun(
  loop: LoopContext,
  task: string,
  runOptions: RunOptions,
  sink?: AgentStreamSink,
): Promise<RunWriter> {
  const { config } = loop;
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
  const writer = new RunWriter(loop.store, runId, 0, writerOptions(loop, runId, sink).options);
  await writer.write({
    type: "run-start",
    runId,
    agentId: config.agentId,
    task: loop.vault ? loop.vault.tokenize(task) : task,
    model: loop.model.model,
    ...(config.system ? { system: config.system } : {}),
    maxTokens: loop.maxTokensDefault,
    budget: config.budget,
    policyDigest: loop.policyDigest,
    toolDigest: loop.toolDigest,
    context: { roles, ...(context.attributes ?? {}) } as Record<string, JsonValue>,
  });
  return writer;
}

/** Reads a stored run and returns a writer positioned after its last event. */
async function open(loop: LoopContext, runId: string, sink?: AgentStreamSink): Promise<RunWriter> {
  const { store } = loop;
  if (typeof runId !== "string" || runId.trim() === "")
    throw new InvalidArgumentError("[core] resume(runId): runId must be a non-empty string");
  const where = `run ${runId} (${store.name} store)`;
  const { options, spans } = writerOptions(loop, runId, sink);
  const reveal = options.reveal ? { reveal: options.reveal } : {};
  // Streamed and folded in slices that yield, so a long log never holds the event loop. The
  // span builder replays the log too, so spans left open by the last process end (and are
  // exported once) when this one appends its run-resume.
  const folded = await foldLog(
    store,
    runId,
    where,
    reveal,
    spans ? (event, fold) => spans.push(event, fold.messages) : undefined,
  );
  if (!folded) throw new RunNotFoundError(runId, `the ${store.name} event store`);
  return new RunWriter(store, runId, folded.events, options, folded.fold);
}

/** Records a person's answer to the parked approval it names (or the only open one). */
async function recordAnswer(
  writer: RunWriter,
  answer: ApprovalAnswer,
  now: () => number,
): Promise<void> {
  const fold = writer.fold;
  const runId = writer.runId;
  const turn = fold.pendingTurn;
  const waiting = turn
    ? [...turn.approvals.values()].filter(
        (entry) => !entry.decision && !turn.results.has(entry.request.toolUseId),
      )
    : [];
  if (fold.end || waiting.length === 0) {
    throw new NoPendingApprovalError(runId, fold.status);
  }
  const target = answer.requestId
    ? waiting.find((entry) => entry.request.requestId === answer.requestId)
    : waiting.length === 1
      ? waiting[0]
      : undefined;
  if (!target) {
    throw new AmbiguousApprovalError(
      runId,
      waiting.map((entry) => entry.request.requestId),
      answer.requestId,
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
}

/**
 * Advances a run until it ends, parks on an approval or pauses: tool turns and model steps in
 * turn, under the run's cancellation signal and wall clock.
 */
async function drive(
  loop: LoopContext,
  writer: RunWriter,
  signal: AbortSignal | undefined,
  pauseSignal?: AbortSignal,
  sink?: AgentStreamSink,
): Promise<RunResult> {
  const fold = writer.fold;
  const state = fold.state;
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(new StopRun("cancelled"));
  if (signal?.aborted) onOuterAbort();
  signal?.addEventListener("abort", onOuterAbort, { once: true });
  const wallClockMs = fold.start.budget.wallClockMs;
  let wallTimer: ReturnType<typeof setTimeout> | undefined;
  if (wallClockMs !== undefined) {
    const remaining = wallClockMs - fold.activeMs(loop.now());
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
    await loop.runBudgets?.atDrive(writer);
    for (;;) {
      if (fold.end) return resultOf(fold, loop.vault);
      if (pauseSignal?.aborted) return { ...resultOf(fold, loop.vault), why: "paused" };
      if (fold.pendingTurn) {
        const parked = await runToolTurn(loop, writer, runSignal);
        if (parked) return resultOf(fold, loop.vault);
        if (state.halted && !fold.pendingTurn) {
          await writer.write({
            type: "run-end",
            status: "halted",
            answer: fold.lastAssistantText,
            why: "halted",
            error: `halted: ${state.haltReason}`,
          });
        }
        continue;
      }
      if (runSignal.aborted) throw runSignal.reason;
      if (
        fold.lastStopReason !== undefined &&
        fold.lastStopReason !== "tool_use" &&
        fold.lastStopReason !== "pause_turn"
      ) {
        await endIfFinal(writer);
        continue;
      }
      await modelStep(loop, writer, runSignal, sink);
    }
  } catch (error) {
    // A run budget that cannot be checked pauses the run (fails closed, the run is not lost).
    if (RunBudgetUnavailableError.isInstance(error))
      return { ...resultOf(fold, loop.vault), why: "run_budget_unavailable", error: error.message };
    return endAfterError(loop, writer, error, runSignal);
  } finally {
    await loop.runBudgets
      ?.afterDrive(writer)
      .catch((error: unknown) => loop.reportError(error, "run budget settle"));
    clearTimeout(wallTimer);
    signal?.removeEventListener("abort", onOuterAbort);
    unlisten();
    // Spans still open (a parked, paused or stopped-early session) are emitted when the run is
    // resumed or ends, never twice; `loopguard trace` shows them from the log at any time.
    // The flush goes to the background: a run ends when its log is durable, not its traces.
    loop.telemetry.requestFlush();
  }
}

/**
 * Ends a run the loop could not continue: `stopped` for a budget, the wall clock or a
 * cancellation, `failed` for anything else. A broken log ends nothing (it cannot be written):
 * the result says why the run stopped in this process.
 */
async function endAfterError(
  loop: LoopContext,
  writer: RunWriter,
  error: unknown,
  runSignal: AbortSignal,
): Promise<RunResult> {
  const fold = writer.fold;
  if (writer.broken) {
    const broken = writer.broken;
    const message = AppendConflictError.isInstance(broken)
      ? `${(broken as Error).message} (this process stopped advancing the run)`
      : `[core] the event store failed, so the run stopped before acting: ${(broken as Error)?.message ?? String(broken)}`;
    return resultOf(fold, loop.vault, { error: message });
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
        answer: fold.lastAssistantText,
        why: stop.why,
        ...(stop.limit ? { limit: stop.limit } : {}),
        ...(stop instanceof RunBudgetStop ? { error: stop.detail } : {}),
      });
    } else {
      const message = LoopguardError.isInstance(error)
        ? (error as Error).message
        : `[core] the run failed unexpectedly: ${(error as Error)?.message ?? String(error)}`;
      if (!LoopguardError.isInstance(error)) loop.reportError(error, "run");
      await writer.write({
        type: "run-end",
        status: "failed",
        answer: fold.lastAssistantText,
        why: "error",
        error: message,
      });
    }
  } catch {
    return resultOf(fold, loop.vault, {
      error: String((writer.broken as Error)?.message ?? error),
    });
  }
  return resultOf(fold, loop.vault);
}
