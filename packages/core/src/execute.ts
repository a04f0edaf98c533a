import { ToolError } from "./errors.js";
import { classifyError, sleep } from "./retry.js";
import type { Tool, ToolContext } from "./tool.js";

/** How one tool call ended. */
export type ToolExecution =
  | { status: "ok"; value: unknown; attempts: number; durationMs: number }
  | {
      status: "error";
      errorKind: "timeout" | "tool_error" | "exception" | "aborted";
      message: string;
      attempts: number;
      durationMs: number;
    };

/** Options for running one call. */
export interface ExecuteOptions {
  /** The run's signal (cancellation, wall clock). */
  signal: AbortSignal;
  /** Attempts in all for an idempotent tool with a transient failure. Default 3. */
  maxAttempts?: number;
  /** Backoff base in ms between tool retries. Default 100. */
  retryDelayMs?: number;
}

const timedOut = Symbol("timeout");

/**
 * Runs a tool with its timeout. A handler that ignores its signal is abandoned at the deadline
 * and its late completion changes nothing. Only idempotent tools are retried, and only on a
 * transient failure (a `ToolError` marked transient, a timeout, or a connection error).
 */
export async function executeTool(
  tool: Tool,
  args: Record<string, unknown>,
  context: Omit<ToolContext, "signal" | "attempt">,
  options: ExecuteOptions,
): Promise<ToolExecution> {
  const started = performance.now();
  const maxAttempts = tool.idempotent ? Math.max(1, options.maxAttempts ?? 3) : 1;
  let last: ToolExecution | undefined;
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    if (options.signal.aborted) {
      return {
        status: "error",
        errorKind: "aborted",
        message: "The run was stopped before this call finished.",
        attempts: attempt - 1,
        durationMs: performance.now() - started,
      };
    }
    const outcome = await attemptOnce(tool, args, { ...context, attempt }, options.signal);
    if (outcome.type === "ok") {
      return {
        status: "ok",
        value: outcome.value,
        attempts: attempt,
        durationMs: performance.now() - started,
      };
    }
    last = {
      status: "error",
      errorKind: outcome.kind,
      message: outcome.message,
      attempts: attempt,
      durationMs: performance.now() - started,
    };
    if (!outcome.transient || attempt === maxAttempts) break;
    try {
      await sleep(
        Math.floor(Math.random() * (options.retryDelayMs ?? 100) * 2 ** (attempt - 1)),
        options.signal,
      );
    } catch {
      break;
    }
  }
  return last!;
}

type Attempt =
  | { type: "ok"; value: unknown }
  | {
      type: "error";
      kind: "timeout" | "tool_error" | "exception" | "aborted";
      message: string;
      transient: boolean;
    };

async function attemptOnce(
  tool: Tool,
  args: Record<string, unknown>,
  context: Omit<ToolContext, "signal">,
  runSignal: AbortSignal,
): Promise<Attempt> {
  const controller = new AbortController();
  let resolveAborted: (value: "aborted") => void = () => undefined;
  const aborted = new Promise<"aborted">((resolve) => {
    resolveAborted = resolve;
  });
  const onRunAbort = () => {
    controller.abort(runSignal.reason);
    resolveAborted("aborted");
  };
  if (runSignal.aborted) onRunAbort();
  else runSignal.addEventListener("abort", onRunAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<typeof timedOut>((resolve) => {
    timer = setTimeout(() => resolve(timedOut), tool.timeoutMs);
  });
  const work = (async () => tool.run(args, { ...context, signal: controller.signal }))();
  // A late rejection of an abandoned handler must not become an unhandled rejection.
  work.catch(() => undefined);
  try {
    const winner = await Promise.race([work, deadline, aborted]);
    if (winner === timedOut) {
      controller.abort(new Error(`tool ${tool.name} timed out after ${tool.timeoutMs} ms`));
      return {
        type: "error",
        kind: "timeout",
        message: `The tool did not answer within ${tool.timeoutMs} ms and was abandoned.`,
        transient: true,
      };
    }
    if (winner === "aborted") {
      return {
        type: "error",
        kind: "aborted",
        message: "The run was stopped while this call was running.",
        transient: false,
      };
    }
    return { type: "ok", value: winner };
  } catch (error) {
    if (
      ToolError.isInstance(error) &&
      error instanceof Error &&
      (error as ToolError).code === "tool_error"
    ) {
      const toolError = error as ToolError;
      return {
        type: "error",
        kind: "tool_error",
        message: toolError.message,
        transient: toolError.transient,
      };
    }
    const transient = classifyError(error).kind === "connection";
    return {
      type: "error",
      kind: "exception",
      message: `The tool failed unexpectedly (${error instanceof Error ? error.name : typeof error}).`,
      transient,
    };
  } finally {
    clearTimeout(timer);
    runSignal.removeEventListener("abort", onRunAbort);
  }
}

/** Turns a tool's return value into the text the model reads. */
export function formatToolOutput(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "(no output)";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
