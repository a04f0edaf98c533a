import { AsyncLocalStorage } from "node:async_hooks";
import * as v from "valibot";
import type { Approver } from "./approval.js";
import type { BreakerOptions } from "./circuit-breaker.js";
import type { Gate, ToolCall } from "./contracts/gate.js";
import type { Scanner } from "./contracts/scanner.js";
import { digestOf } from "./digest.js";
import { InvalidArgumentError } from "./errors.js";
import type { DecisionRecord, RunEvent } from "./events.js";
import { recordCall } from "./fold.js";
import {
  checkRunLogOptions,
  type GuardRunLog,
  openGuardRun,
  type WithRunContext,
  wantsLog,
} from "./guard-run.js";
import type { OutputEnvelope, RecordedScan } from "./output.js";
import { defaultHaltOn, policyDigestOf, sortGates } from "./pipeline.js";
import { randomHex } from "./random-hex.js";
import { RunState } from "./run-state.js";
import { tool as declareTool, type Tool } from "./tool.js";
import { type CallScope, ToolCallPath, type ToolPathOptions } from "./tool-call.js";

const storage = new AsyncLocalStorage<RunState>();
/** The log of each run `withRun` opened with a store, exporters, a budget or durable approvals. */
const runLogs = new WeakMap<RunState, GuardRunLog>();
/** Runs asked to end `stopped` (`stopRun`) when their `withRun` callback settles. */
const stopRequests = new WeakMap<RunState, { why: string; message?: string }>();
/** The signal of a guarded call whose caller passed none: it never aborts (tools still time out). */
const neverAborted = new AbortController().signal;

/** The run `withRun` gives its callback: the halt latch and the run's identity. */
export type RunHandle = RunState;

/**
 * Runs `fn` inside a run: every guarded tool called from it (however deep, across awaits)
 * shares the run's halt latch, loop detection, taint and call history. Given a `store`
 * (or `exporters`, `onEvent`, a `budget`, a `vault`, durable approvals), the run is logged
 * like the loop's: `run-start`, each guarded call's intent or refusal and result, approvals,
 * `run-halt`, and `run-end` when `fn` settles (none while an approval is open: the run waits
 * as `awaiting_approval`, and `withRun` with the same `runId` continues it).
 *
 * @example
 * await withRun({ agentId: "assistant", store: jsonlEventStore({ dir: ".loopguard/runs" }) }, async (run) => {
 *   const outcome = await guardedRefund({ order_id: "A1001", amount: 89.99, reason: "damaged" }, { toolUseId });
 *   if (run.halted) console.log("stopped:", run.haltReason);
 * });
 */
export function withRun<T>(
  context: WithRunContext,
  fn: (run: RunHandle) => T | Promise<T>,
): Promise<T> {
  if (context === null || typeof context !== "object") {
    throw new InvalidArgumentError(
      '[core] withRun(context, fn): context must be an object such as { agentId: "assistant" }',
    );
  }
  if (typeof fn !== "function")
    throw new InvalidArgumentError("[core] withRun(context, fn): fn must be a function");
  if (wantsLog(context)) {
    checkRunLogOptions(context);
    return withLoggedRun(context, fn);
  }
  const run = new RunState({
    ...context,
    runId: context.runId ?? `run_${randomHex(8)}`,
    agentId: context.agentId ?? "agent",
  });
  return storage.run(run, async () => fn(run));
}

async function withLoggedRun<T>(
  context: WithRunContext,
  fn: (run: RunHandle) => T | Promise<T>,
): Promise<T> {
  const { state, log } = await openGuardRun(context);
  runLogs.set(state, log);
  return storage.run(state, async () => {
    let result: T;
    try {
      result = await fn(state);
    } catch (error) {
      await log.finish(error, stopRequests.get(state));
      throw error;
    }
    await log.finish(undefined, stopRequests.get(state));
    return result;
  });
}

/**
 * Asks a logged run to end `stopped` with `why` (e.g. `host_disconnected`) when its `withRun`
 * callback settles, instead of `completed` or `failed`: every approval request still open is
 * recorded as `withdrawn` (nobody can answer it any more; `approveRun` then says the run
 * ended) and the `run-end` carries `why` and `message`. For hosts whose run ends because its
 * peer went away (an MCP proxy whose host hung up). A run without a log has nothing to write.
 *
 * @example
 * await withRun({ store, approval: { durable: true } }, async (run) => {
 *   await hostGone;
 *   stopRun(run, "host_disconnected", "the MCP host closed the connection");
 * });
 */
export function stopRun(run: RunHandle, why: string, message?: string): void {
  if (!(run instanceof RunState))
    throw new InvalidArgumentError(
      "[core] stopRun(run, why): run must be the handle withRun gave its callback",
    );
  if (typeof why !== "string" || !/^[a-z][a-z0-9_]{0,63}$/.test(why))
    throw new InvalidArgumentError(
      `[core] stopRun(run, why): why must be a snake_case code such as "host_disconnected", got ${JSON.stringify(why)}`,
    );
  stopRequests.set(run, { why, ...(message !== undefined ? { message } : {}) });
}

/** The run the caller is inside, if any. */
export function currentRun(): RunState | undefined {
  return storage.getStore();
}

/** What a guarded call returns: a value, a refusal the host can hand to its model, or an error. */
export type GuardOutcome<T> =
  | { type: "ok"; value: T; content: string; scan?: RecordedScan }
  | {
      type: "refused";
      reason: string;
      message: string;
      fixHints: string[];
      decision: DecisionRecord;
    }
  | { type: "error"; kind: string; message: string };

/** Options of `guardTool`. */
export interface GuardOptions {
  gates?: readonly Gate[];
  scanner?: Scanner;
  envelope?: OutputEnvelope;
  approver?: Approver;
  approval?: {
    /** How long the approver may take. Default 5 minutes. */
    timeoutMs?: number;
    /** How long an approval request stays valid (its `expiresAt`). Default 24 hours. */
    ttlMs?: number;
  };
  /** @deprecated Use `approval.timeoutMs`. */
  approvalTimeoutMs?: number;
  haltOn?: readonly string[];
  breaker?: BreakerOptions;
  onError?: (error: unknown, where: string) => void;
  /** The clock, for tests. */
  now?: () => number;
  /** For a plain function: its name (required) and flags. */
  name?: string;
  sensitive?: boolean;
  idempotent?: boolean;
  timeoutMs?: number;
}

/** A guarded tool: call it like the tool, get an outcome value back. */
export type GuardedTool<TArgs, TResult> = ((
  args: TArgs,
  options?: { toolUseId?: string; signal?: AbortSignal },
) => Promise<GuardOutcome<TResult>>) & {
  readonly tool: Tool<TArgs, TResult>;
};

/**
 * Puts a tool (or a plain async function) behind the same gate pipeline the loop uses, for
 * loops loopguard does not own (the Vercel AI SDK, the OpenAI Agents SDK, MCP servers, plain
 * code). Run-level state follows the caller's `withRun` through AsyncLocalStorage. The call
 * takes the loop's own path (`ToolCallPath`): the approver gets the same request and the run
 * state records the same events.
 *
 * @example
 * const guarded = guardTool(issueRefund, { gates: [runGuard()] });
 * const outcome = await guarded({ order_id: "A1001", amount: 89.99, reason: "damaged" });
 * if (outcome.type === "refused") return outcome.message; // hand it back to the model
 */
export function guardTool<TArgs, TResult>(
  target: Tool<TArgs, TResult> | ((args: TArgs) => TResult | Promise<TResult>),
  options: GuardOptions = {},
): GuardedTool<TArgs, TResult> {
  const item = toTool(target, options) as Tool<any, any>;
  const pathOptions = guardPathOptions(options);
  const path = new ToolCallPath(pathOptions);
  // A logged run may tokenise with its vault and park asks: its own path, made once per run.
  const loggedPaths = new WeakMap<GuardRunLog, ToolCallPath>();
  const pathOf = (log: GuardRunLog): ToolCallPath => {
    let own = loggedPaths.get(log);
    if (!own) {
      own = new ToolCallPath({
        ...pathOptions,
        vault: log.vault,
        approval: { ...pathOptions.approval, durable: log.durable },
      });
      loggedPaths.set(log, own);
    }
    return own;
  };
  let warnedNoToolUseId = false;

  const guarded = async (
    args: TArgs,
    callOptions: { toolUseId?: string; signal?: AbortSignal } = {},
  ): Promise<GuardOutcome<TResult>> => {
    const run = storage.getStore();
    if (!callOptions.toolUseId && !warnedNoToolUseId) {
      warnedNoToolUseId = true;
      process.emitWarning(
        `[core] guardTool(${item.name}) was called without a toolUseId, so its idempotency key (runId:toolUseId) is random and a retried call gets a new one; pass the host's tool-call id: guarded(args, { toolUseId })`,
        { code: "LOOPGUARD_NO_TOOL_USE_ID" },
      );
    }
    const toolUseId = callOptions.toolUseId ?? `call_${globalThis.crypto.randomUUID()}`;
    const runId = run?.runId ?? "no-run";
    const log = run ? runLogs.get(run) : undefined;
    const call: ToolCall = {
      tool: item.name,
      // With a vault the model sends tokens: gates judge the real values (as in the loop),
      // and the log keeps the tokens.
      args: (log?.vault ? log.vault.reveal(args ?? {}) : (args ?? {})) as Record<string, unknown>,
      toolUseId,
      idempotencyKey: `${runId}:${toolUseId}`,
      sensitive: item.sensitive,
      idempotent: item.idempotent,
      run,
    };
    const scope: CallScope = log
      ? {
          runId,
          agentId: run!.agentId,
          step: run!.spend.steps,
          write: (...events) => log.writer.write(...events),
          recordedApproval: () => log.approvalOf(item.name, digestOf(call.args)),
          budget: (tool) => log.budget(tool),
        }
      : {
          runId,
          agentId: run?.agentId ?? "agent",
          step: run?.spend.steps ?? 0,
          write: run ? (...events) => recordOnRun(run, events) : noWrite,
        };
    const signal = callOptions.signal ?? neverAborted;
    try {
      // A person may have answered an open approval from another process meanwhile.
      if (log) await log.sync();
      const callPath = log ? pathOf(log) : path;
      const admission = await callPath.admit(scope, call, item, signal);
      if (admission.type === "refused") {
        const record = admission.record;
        return {
          type: "refused",
          reason: record.reason ?? "refused",
          message: record.message ?? "",
          fixHints: record.fixHints ?? [],
          decision: record,
        };
      }
      if (admission.type === "parked") return pendingRefusal(admission.record, log, item, call);
      const done = await callPath.perform(
        scope,
        item,
        toolUseId,
        admission.args,
        call.idempotencyKey,
        signal,
        call,
      );
      if (done.type === "ok") return { ...done, value: done.value as TResult };
      // A guarded call has no parent run to park: a delegating tool answered with an error.
      if (done.type === "parked")
        return { type: "error", kind: "child_refused", message: "The child run parked." };
      return { type: "error", kind: done.kind, message: done.message };
    } catch (error) {
      // The caller's signal aborted the call while it waited on an approver.
      if (signal.aborted)
        return { type: "error", kind: "aborted", message: "The call was cancelled by its caller." };
      throw error;
    }
  };
  return Object.assign(guarded, { tool: item as Tool<TArgs, TResult> });
}

/**
 * A call whose ask was parked (durable approvals): refused as `approval_pending` with the
 * request id; the identical call is admitted once a person approves it.
 */
function pendingRefusal(
  record: DecisionRecord,
  log: GuardRunLog | undefined,
  item: Tool<any, any>,
  call: ToolCall,
): GuardOutcome<never> {
  const request = log?.approvalOf(item.name, digestOf(call.args))?.request;
  const requestId = request?.requestId ?? "unknown";
  const runId = call.run?.runId ?? "no-run";
  const message = `A person must approve this call first (${request?.reason ?? "approval"}: ${request?.message ?? "the policy asks"}). The request ${requestId} is recorded and run ${runId} waits for an answer.`;
  const decision: DecisionRecord = {
    ...record,
    outcome: "deny",
    refusedAt: "3:approval",
    reason: "approval_pending",
    message,
    fixHints: [
      "Tell the user the call waits for approval; do not retry it with other arguments to get around the approval.",
      `Once approved (loopguard approve ${runId} --request ${requestId}), make the identical call again: it is admitted once.`,
    ],
    details: { ...(record.details ?? {}), requestId, runId },
  };
  return {
    type: "refused",
    reason: "approval_pending",
    message,
    fixHints: decision.fixHints!,
    decision,
  };
}

function guardPathOptions(options: GuardOptions): ToolPathOptions {
  for (const [index, gate] of (options.gates ?? []).entries()) {
    if (!gate || typeof gate.check !== "function")
      throw new InvalidArgumentError(
        `[core] guardTool: gates[${index}] is not a gate (it needs name, step and check)`,
      );
  }
  const gates = sortGates(options.gates ?? []);
  const haltOn = options.haltOn ?? defaultHaltOn;
  return {
    gates,
    haltOn,
    policyDigest: policyDigestOf(gates, haltOn),
    approval: {
      approver: options.approver,
      timeoutMs: options.approval?.timeoutMs ?? options.approvalTimeoutMs ?? 300_000,
      ttlMs: options.approval?.ttlMs ?? 86_400_000,
      durable: false,
    },
    breaker: options.breaker,
    scanner: options.scanner,
    envelope: options.envelope,
    vault: undefined,
    toolRetry: {},
    now: options.now ?? Date.now,
    reportError: (error, where) => {
      try {
        options.onError?.(error, where);
      } catch {
        // nowhere left to report
      }
    },
  };
}

const noWrite = (): Promise<void> => Promise.resolve();

/** The guard's log is the run state: its call events go where the fold would put them. */
function recordOnRun(run: RunState, events: RunEvent[]): Promise<void> {
  for (const event of events) {
    if (
      event.type === "tool-call-intent" ||
      event.type === "tool-call-refusal" ||
      event.type === "tool-call-result"
    )
      recordCall(run, event);
  }
  return Promise.resolve();
}

function toTool<TArgs, TResult>(
  target: Tool<TArgs, TResult> | ((args: TArgs) => TResult | Promise<TResult>),
  options: GuardOptions,
): Tool<TArgs, TResult> {
  if (typeof target === "function") {
    if (!options.name)
      throw new InvalidArgumentError(
        "[core] guardTool(fn, options): a plain function needs options.name (the tool name gates match on)",
      );
    return declareTool({
      name: options.name,
      description: `Guarded function ${options.name}`,
      input: v.looseObject({}) as never,
      ...(options.sensitive !== undefined ? { sensitive: options.sensitive } : {}),
      ...(options.idempotent !== undefined ? { idempotent: options.idempotent } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      run: (args: unknown) => target(args as TArgs),
    }) as unknown as Tool<TArgs, TResult>;
  }
  if (!target || typeof target.parse !== "function") {
    throw new InvalidArgumentError(
      "[core] guardTool(target): target must be a tool made with tool({ ... }) or an async function with options.name",
    );
  }
  return target;
}
