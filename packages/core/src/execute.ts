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
      /**
       * Whether the last failure could pass on a retry (a transient `ToolError`, a timeout, a
       * connection error). A `ToolError` that is not transient is the tool answering "no"
       * (no such order, bad input): the dependency behind it is up.
       */
      transient?: boolean;
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
      transient: outcome.transient,
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

/** Callbacks waiting on each run signal: one `abort` listener per signal, not one per call. */
const abortCallbacks = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `callback` when `signal` aborts (at once if it has); returns the way to stop waiting. */
function onAbort(signal: AbortSignal, callback: () => void): () => void {
  if (signal.aborted) {
    callback();
    return () => undefined;
  }
  let callbacks = abortCallbacks.get(signal);
  if (!callbacks) {
    const waiting = new Set<() => void>();
    callbacks = waiting;
    abortCallbacks.set(signal, waiting);
    signal.addEventListener(
      "abort",
      () => {
        abortCallbacks.delete(signal);
        for (const waiter of waiting) waiter();
      },
      { once: true },
    );
  }
  callbacks.add(callback);
  const registered = callbacks;
  return () => {
    registered.delete(callback);
  };
}

async function attemptOnce(
  tool: Tool,
  args: Record<string, unknown>,
  context: Omit<ToolContext, "signal">,
  runSignal: AbortSignal,
): Promise<Attempt> {
  // The call's AbortController is made only when the tool reads its signal: most tools never
  // do, and a controller costs more than the rest of the call. A signal read after the
  // deadline or the run's end comes back already aborted, with the same reason.
  let controller: AbortController | undefined;
  let abortReason: { reason: unknown } | undefined;
  const abortCall = (reason: unknown) => {
    if (abortReason) return;
    abortReason = { reason };
    controller?.abort(reason);
  };
  let settle!: (
    outcome:
      | { type: "value"; value: unknown }
      | { type: "thrown"; error: unknown }
      | "timeout"
      | "aborted",
  ) => void;
  const outcome = new Promise<
    { type: "value"; value: unknown } | { type: "thrown"; error: unknown } | "timeout" | "aborted"
  >((resolve) => {
    settle = resolve;
  });
  const stopWaiting = onAbort(runSignal, () => {
    abortCall(runSignal.reason);
    settle("aborted");
  });
  const timer = setTimeout(() => settle("timeout"), tool.timeoutMs);
  const toolContext: ToolContext = {
    ...context,
    get signal(): AbortSignal {
      if (!controller) {
        controller = new AbortController();
        if (abortReason) controller.abort(abortReason.reason);
      }
      return controller.signal;
    },
  };
  // A late settlement of an abandoned handler changes nothing (and never goes unhandled). A
  // handler that throws before returning settles the same as one whose promise rejects.
  try {
    Promise.resolve(tool.run(args, toolContext)).then(
      (value) => settle({ type: "value", value }),
      (error) => settle({ type: "thrown", error }),
    );
  } catch (error) {
    settle({ type: "thrown", error });
  }
  try {
    const winner = await outcome;
    if (winner === "timeout") {
      abortCall(new Error(`tool ${tool.name} timed out after ${tool.timeoutMs} ms`));
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
    if (winner.type === "value") return { type: "ok", value: winner.value };
    const error = winner.error;
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
    stopWaiting();
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
