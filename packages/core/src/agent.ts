import type * as v from "valibot";
import { type AgentOptions, type RunOptions, validateAgentOptions } from "./agent-options.js";
import {
  type AgentStream,
  type AgentStreamOptions,
  type AgentStreamSink,
  createAgentStream,
} from "./agent-stream.js";
import {
  type AsToolOptions,
  asTool,
  type ChildRunError,
  checkDelegations,
  type DefaultChildInput,
} from "./as-tool.js";
import { openTreeRun, recordTreeAnswer } from "./child-route.js";
import type { EventStore } from "./contracts/event-store.js";
import { drive } from "./drive-run.js";
import { InvalidArgumentError } from "./errors.js";
import { guardRunModel } from "./fold.js";
import type { JsonValue } from "./json.js";
import { type LoopContext, loopContext, open, writerOptions } from "./loop-context.js";
import { noticeVolatileStore } from "./memory-event-store.js";
import { randomHex } from "./random-hex.js";
import type { ApprovalAnswer } from "./record-answer.js";
import { withRunLease } from "./run-lease.js";
import { admitted, RunQueue, resolveMaxConcurrentRuns } from "./run-queue.js";
import { failedStartResult, type RunResult, resultOf } from "./run-result.js";
import { checkDeadline, type ShutdownReport } from "./run-telemetry.js";
import { RunWriter } from "./run-writer.js";
import type { ObjectSchema, Tool } from "./tool.js";

// The option and result types live beside their code; these names stay importable from here.
export type { AgentOptions, RunOptions } from "./agent-options.js";
export { breakerOf } from "./breakers.js";
export type { Redactor } from "./contracts/redactor.js";
export type { Vault } from "./contracts/vault.js";
export type { ApprovalAnswer } from "./record-answer.js";
export type { BlockedCall, RunResult } from "./run-result.js";
export type { RunState } from "./run-state.js";

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
  /**
   * This agent as a tool for another agent's `tools`: each call starts a child run of this
   * agent, linked to the parent run (its log, budget, gates, trace and stream), with a run id
   * derived from the parent's run id and the call id, so a resumed parent finds the same child.
   * The child's final answer is the tool's result; a child that fails, halts, runs out of
   * budget or is refused gives a `ChildRunError` (as JSON) the parent's model reads.
   *
   * @example
   * const researcher = createAgent({ model, tools: [search], agentId: "researcher" });
   * const lead = createAgent({
   *   model,
   *   tools: [researcher.asTool({ name: "research", description: "Researches a question", share: 0.5 })],
   *   budget: { maxUsd: 1 },
   * });
   */
  asTool<TSchema extends ObjectSchema = DefaultChildInput>(
    options: AsToolOptions<TSchema>,
  ): Tool<v.InferOutput<TSchema>, string | ChildRunError>;
  /** The spans of a stored run. */
  readonly store: EventStore;
  readonly tools: ReadonlyMap<string, Tool<any, any>>;
  /** The digest of every gate's settings (recorded in `run-start`). */
  readonly policyDigest: string;
  /**
   * Sends the spans still queued, then flushes and shuts down the exporters, within
   * `deadlineMs` (default: the agent's `shutdownDeadlineMs`, 10 000); it returns sooner when
   * everything is sent or an exporter is known down. What is left is dropped, reported to
   * `onError` and counted in the result (`dropped`, always a number). Runs never wait for
   * exporters; this is where flushing waits. Rejects only for a `deadlineMs` that is not a
   * finite number above 0; safe to call twice.
   */
  shutdown(options?: { deadlineMs?: number }): Promise<ShutdownReport>;
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
  checkDelegations(
    loop.config.agentId,
    loop.config.tools,
    loop.config.prices,
    loop.config.maxDepth,
  );
  if (options.store === undefined) noticeVolatileStore(options.onError);
  // Admission control: runs past maxConcurrentRuns wait their turn (priority, then arrival).
  const queue = new RunQueue(resolveMaxConcurrentRuns(options.maxConcurrentRuns));
  const agent: Agent = {
    asTool: (toolOptions) => asTool(loop, agent, toolOptions),
    store: loop.store,
    tools: loop.tools,
    policyDigest: loop.policyDigest,
    async run(task, runOptions = {}) {
      const options = {
        ...runOptions,
        runId: runOptions.runId ?? `run_${randomHex(8)}`,
      };
      return admitted(queue, runOptions, options.runId, async (queueWaitMs) => {
        let writer: RunWriter;
        try {
          writer = await startRun(loop, task, { ...options, queueWaitMs });
        } catch (error) {
          if (InvalidArgumentError.isInstance(error)) throw error;
          // The store could not record the run-start: the run never started (no log is left
          // `running`); a result, not a throw, like every other way a run can fail.
          return failedStartResult(options.runId, error);
        }
        return drive(loop, writer, runOptions.signal, runOptions.pauseSignal);
      });
    },
    stream(task, streamOptions = {}) {
      const options = {
        ...streamOptions,
        runId: streamOptions.runId ?? `run_${randomHex(8)}`,
      };
      return createAgentStream(
        (sink) =>
          admitted(queue, options, options.runId, async (queueWaitMs) => {
            let writer: RunWriter;
            try {
              writer = await startRun(loop, task, { ...options, queueWaitMs }, sink);
            } catch (error) {
              if (InvalidArgumentError.isInstance(error)) throw error;
              return failedStartResult(options.runId, error);
            }
            const result = await drive(loop, writer, options.signal, options.pauseSignal, sink);
            endStream(loop, writer, result, sink);
            return result;
          }),
        { thinking: streamOptions.thinking === true },
      );
    },
    resumeStream(runId, resumeOptions = {}) {
      return createAgentStream(
        (sink) =>
          admitted(queue, resumeOptions, runId, () =>
            withRunLease(
              loop.store,
              runId,
              async () => {
                const { target, writer } = await openTreeRun(loop, runId, sink);
                const fold = writer.fold;
                if (fold.end || fold.awaitingApproval) {
                  // Nothing to run: the host still gets its run-end.
                  const result = resultOf(fold, target.vault);
                  endStream(target, writer, result, sink, true);
                  return result;
                }
                await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
                const result = await drive(
                  target,
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
          ),
        { thinking: resumeOptions.thinking === true },
      );
    },
    resume(runId, resumeOptions = {}) {
      // One owner per resume: the store's lease (where it has one) is held throughout.
      return admitted(queue, resumeOptions, runId, () =>
        withRunLease(
          loop.store,
          runId,
          async () => {
            // A child run id resumes that child under its tree's rules (a worker's child job).
            const { target, writer } = await openTreeRun(loop, runId);
            const fold = writer.fold;
            // Parked on its own approval: nothing to do until it is answered. Parked on a
            // child's: the call runs again and finds the child as it stands.
            if (fold.end || fold.awaitingApproval) return resultOf(fold, target.vault);
            await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
            return drive(target, writer, resumeOptions.signal, resumeOptions.pauseSignal);
          },
          loop.reportError,
        ),
      );
    },
    async approve(runId, answer, approveOptions = {}) {
      if (!answer || !["approve", "deny", "indeterminate"].includes(answer.decision)) {
        throw new InvalidArgumentError(
          `[core] approve(${runId}, answer): answer.decision must be "approve", "deny" or "indeterminate", got ${JSON.stringify(answer?.decision)}`,
        );
      }
      const answered = await withRunLease(
        loop.store,
        runId,
        async () => {
          const { target, writer } = await openTreeRun(loop, runId);
          // A parent parked on a child's approval: the answer goes to the run that asked.
          const routed = await recordTreeAnswer(target, writer, answer);
          // A guarded run has no loop to drive: the answer waits for the identical call.
          if (
            approveOptions.resume === false ||
            writer.fold.awaitingApproval ||
            writer.fold.start.model === guardRunModel
          )
            return resultOf(writer.fold, target.vault);
          // A child run: the tree goes on from its root (which resumes the child).
          if (writer.fold.start.parent && !routed) return writer.fold.start.parent.rootRunId;
          await writer.write({ type: "run-resume", fromSeq: writer.nextSeq });
          return drive(target, writer, approveOptions.signal, approveOptions.pauseSignal);
        },
        loop.reportError,
      );
      if (typeof answered !== "string") return answered;
      return agent.resume(answered, approveOptions);
    },
    async shutdown(shutdownOptions) {
      const deadlineMs = shutdownOptions?.deadlineMs ?? loop.config.shutdownDeadlineMs;
      // A configured 0 means "do not wait": the smallest deadline there is.
      if (shutdownOptions?.deadlineMs !== undefined) checkDeadline(deadlineMs, "agent.shutdown");
      return loop.telemetry.shutdown(Math.max(1, deadlineMs));
    },
  };
  return agent;
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

/** Checks the task, writes the run's `run-start` and returns its writer. */
async function startRun(
  loop: LoopContext,
  task: string,
  runOptions: RunOptions & { queueWaitMs?: number },
  sink?: AgentStreamSink,
): Promise<RunWriter> {
  const { config } = loop;
  if (typeof task !== "string" || task.trim() === "") {
    throw new InvalidArgumentError(
      "[core] agent.run(task): task must be a non-empty string describing what the agent should do",
    );
  }
  const runId = runOptions.runId ?? `run_${randomHex(8)}`;
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
    ...(runOptions.queueWaitMs ? { queueWaitMs: runOptions.queueWaitMs } : {}),
    maxTokens: loop.maxTokensDefault,
    budget: config.budget,
    policyDigest: loop.policyDigest,
    toolDigest: loop.toolDigest,
    context: { roles, ...(context.attributes ?? {}) } as Record<string, JsonValue>,
  });
  return writer;
}
