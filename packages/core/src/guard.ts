import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes, randomUUID } from "node:crypto";
import * as v from "valibot";
import { breakerOf } from "./agent.js";
import type { ApprovalOutcome, Approver } from "./approval.js";
import { readApproverAnswer } from "./approval.js";
import type { BreakerOptions } from "./circuit-breaker.js";
import type { Gate, ToolCall } from "./contracts/gate.js";
import type { Scanner } from "./contracts/scanner.js";
import { digestOf } from "./digest.js";
import { InvalidArgumentError } from "./errors.js";
import type { DecisionRecord } from "./events.js";
import { executeTool, formatToolOutput } from "./execute.js";
import { type OutputEnvelope, type RecordedScan, scanOutput } from "./output.js";
import { defaultHaltOn, judgeCall, sortGates } from "./pipeline.js";
import { type RunContextInput, RunState } from "./run-state.js";
import { tool as declareTool, type Tool } from "./tool.js";

const storage = new AsyncLocalStorage<RunState>();
/** The signal of a guarded call whose caller passed none: it never aborts (tools still time out). */
const neverAborted = new AbortController().signal;

/** The run `withRun` gives its callback: the halt latch and the run's identity. */
export type RunHandle = RunState;

/**
 * Runs `fn` inside a run: every guarded tool called from it (however deep, across awaits)
 * shares the run's halt latch, loop detection, taint and call history.
 *
 * @example
 * await withRun({ agentId: "assistant" }, async (run) => {
 *   const outcome = await guardedRefund({ order_id: "A1001", amount: 89.99, reason: "damaged" });
 *   if (run.halted) console.log("stopped:", run.haltReason);
 * });
 */
export function withRun<T>(
  context: RunContextInput,
  fn: (run: RunHandle) => T | Promise<T>,
): Promise<T> {
  if (context === null || typeof context !== "object") {
    throw new InvalidArgumentError(
      '[core] withRun(context, fn): context must be an object such as { agentId: "assistant" }',
    );
  }
  if (typeof fn !== "function")
    throw new InvalidArgumentError("[core] withRun(context, fn): fn must be a function");
  const run = new RunState({
    ...context,
    runId: context.runId ?? `run_${randomBytes(8).toString("hex")}`,
    agentId: context.agentId ?? "agent",
  });
  return storage.run(run, async () => fn(run));
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
  /** How long the approver may take. Default 5 minutes. */
  approvalTimeoutMs?: number;
  haltOn?: readonly string[];
  breaker?: BreakerOptions;
  onError?: (error: unknown, where: string) => void;
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
 * code). Run-level state follows the caller's `withRun` through AsyncLocalStorage.
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
  const item = toTool(target, options);
  const gates = sortGates(options.gates ?? []);
  for (const [index, gate] of gates.entries()) {
    if (!gate || typeof gate.check !== "function")
      throw new InvalidArgumentError(
        `[core] guardTool: gates[${index}] is not a gate (it needs name, step and check)`,
      );
  }
  const haltOn = options.haltOn ?? defaultHaltOn;
  const onError = (error: unknown, where: string) => {
    try {
      options.onError?.(error, where);
    } catch {
      // nowhere left to report
    }
  };
  const breaker = breakerOf(item as Tool<any, any>, options.breaker);

  const guarded = async (
    args: TArgs,
    callOptions: { toolUseId?: string; signal?: AbortSignal } = {},
  ): Promise<GuardOutcome<TResult>> => {
    const run = storage.getStore();
    const toolUseId = callOptions.toolUseId ?? `call_${randomUUID()}`;
    const runId = run?.runId ?? "no-run";
    const call: ToolCall = {
      tool: item.name,
      args: (args ?? {}) as Record<string, unknown>,
      toolUseId,
      idempotencyKey: `${runId}:${toolUseId}`,
      sensitive: item.sensitive,
      idempotent: item.idempotent,
      run,
    };
    const judgement = await judgeCall({
      call,
      tool: item as Tool,
      gates,
      haltOn,
      approve: (ask) => askInline(options, item.name, call, ask.reason, ask.message, onError),
      breaker,
      onError,
    });
    if (judgement.type !== "allow") {
      const record = judgement.record;
      run?.refusals.push({
        tool: item.name,
        toolUseId,
        reason: record.reason ?? "refused",
        decision: record,
      });
      observe(gates, call, "refused", record.reason, 0, onError);
      return {
        type: "refused",
        reason: record.reason ?? "refused",
        message: record.message ?? "",
        fixHints: record.fixHints ?? [],
        decision: record,
      };
    }
    run?.calls.push({ tool: item.name, argsDigest: digestOf(judgement.args), toolUseId });
    const signal = callOptions.signal ?? neverAborted;
    const result = await executeTool(
      item as Tool,
      judgement.args,
      { idempotencyKey: call.idempotencyKey, runId, agentId: run?.agentId ?? "agent", toolUseId },
      { signal },
    );
    if (result.status === "ok") breaker.onSuccess();
    else if (result.errorKind !== "aborted") breaker.onFailure();
    else breaker.release();
    observe(
      gates,
      call,
      result.status,
      result.status === "error" ? result.errorKind : undefined,
      result.durationMs,
      onError,
    );
    if (result.status === "error")
      return { type: "error", kind: result.errorKind, message: result.message };
    const text = formatToolOutput(result.value);
    const { content, scan } = await scanOutput(
      text,
      { source: "tool_output", tool: item.name, toolUseId, runId },
      options.scanner,
      options.envelope,
      onError,
    );
    run?.outputs.push({ tool: item.name, toolUseId, text: content, ...(scan ? { scan } : {}) });
    return { type: "ok", value: result.value as TResult, content, ...(scan ? { scan } : {}) };
  };
  return Object.assign(guarded, { tool: item });
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

async function askInline(
  options: GuardOptions,
  tool: string,
  call: ToolCall,
  reason: string,
  message: string,
  onError: (error: unknown, where: string) => void,
): Promise<ApprovalOutcome> {
  if (!options.approver) return { type: "deny", why: "no_approver" };
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const answer = await Promise.race([
      Promise.resolve().then(() =>
        options.approver!(
          {
            requestId: `apr_${randomBytes(8).toString("hex")}`,
            runId: call.run?.runId ?? "no-run",
            agentId: call.run?.agentId ?? "agent",
            tool,
            args: call.args,
            toolUseId: call.toolUseId,
            reason,
            message,
            argsDigest: digestOf(call.args),
            policyDigest: "",
            expiresAt: Date.now() + (options.approvalTimeoutMs ?? 300_000),
          },
          { signal: controller.signal },
        ),
      ),
      new Promise<symbol>((resolve) => {
        timer = setTimeout(() => resolve(approvalTimeout), options.approvalTimeoutMs ?? 300_000);
      }),
    ]);
    if (answer === approvalTimeout) {
      controller.abort();
      return { type: "deny", why: "timeout" };
    }
    return readApproverAnswer(answer);
  } catch (error) {
    onError(error, "approver");
    return { type: "indeterminate", note: "the approver failed" };
  } finally {
    clearTimeout(timer);
  }
}

const approvalTimeout = Symbol("approval timeout");

function observe(
  gates: readonly Gate[],
  call: ToolCall,
  status: "ok" | "error" | "refused",
  reason: string | undefined,
  durationMs: number,
  onError: (error: unknown, where: string) => void,
): void {
  for (const gate of gates) {
    if (!gate.observe) continue;
    Promise.resolve()
      .then(() => gate.observe!({ call, status, ...(reason ? { reason } : {}), durationMs }))
      .catch((error) => onError(error, `gate ${gate.name} observe`));
  }
}
