import { InvalidArgumentError, ToolError } from "../errors.js";
import type { Tool, ToolContext } from "../tool.js";

/** How a faulty tool misbehaves. */
export type ToolFaultMode = "hang" | "slow" | "fail-times" | "fail-always";

/** Options of {@link faultyTool}. */
export interface FaultyToolOptions {
  mode: ToolFaultMode;
  /** `hang`: how long the handler ignores its signal before finishing anyway (default 10 000). `slow`: the delay before answering, honouring the signal (default 1 000). */
  delayMs?: number;
  /** `fail-times`: how many calls fail before the tool works. Default 1. */
  times?: number;
  /** Whether the failures are transient (`ToolError` with `transient: true`), so idempotent tools retry them. Default `true`. */
  transient?: boolean;
}

/** A tool with injected faults; it counts what happened to it. */
export type FaultyTool<TArgs = Record<string, unknown>, TResult = unknown> = Tool<
  TArgs,
  TResult
> & {
  /** Handler invocations (every attempt counts). */
  readonly calls: number;
  /** Calls that failed on purpose. */
  readonly failures: number;
  /** Times the wrapped handler ran to the end: the side effects that happened. */
  readonly effects: number;
  /** Effects that happened after the call's signal had aborted (a late completion). */
  readonly lateEffects: number;
  /** The contexts of every call, in order. */
  readonly contexts: readonly ToolContext[];
};

/**
 * Wraps a tool so it hangs (ignoring its signal, finishing late), answers slowly (honouring
 * its signal), fails the first N times, or always fails, and counts handler calls and side
 * effects so tests can assert how often the handler really ran.
 *
 * @example
 * const flaky = faultyTool(lookupOrder, { mode: "fail-times", times: 2 });
 * // ... run the agent, then: expect(flaky.calls).toBe(3)
 */
export function faultyTool<TArgs, TResult>(
  base: Tool<TArgs, TResult>,
  options: FaultyToolOptions,
): FaultyTool<TArgs, TResult> {
  if (!base || typeof base.run !== "function" || !base.spec)
    throw new InvalidArgumentError(
      "[core] faultyTool(base, options): base must be a tool made with tool({ ... })",
    );
  const modes: readonly ToolFaultMode[] = ["hang", "slow", "fail-times", "fail-always"];
  if (!options || !modes.includes(options.mode))
    throw new InvalidArgumentError(
      `[core] faultyTool: mode must be one of ${modes.join(", ")}, got ${JSON.stringify(options?.mode)}`,
    );
  const delayMs = options.delayMs ?? (options.mode === "hang" ? 10_000 : 1_000);
  if (!Number.isFinite(delayMs) || delayMs < 0)
    throw new InvalidArgumentError(
      `[core] faultyTool: delayMs must be a non-negative number, got ${String(options.delayMs)}`,
    );
  const times = options.times ?? 1;
  if (!Number.isInteger(times) || times < 0)
    throw new InvalidArgumentError(
      `[core] faultyTool: times must be a non-negative integer, got ${String(options.times)}`,
    );
  const transient = options.transient ?? true;
  let calls = 0;
  let failures = 0;
  let effects = 0;
  let lateEffects = 0;
  const contexts: ToolContext[] = [];

  const effect = async (args: TArgs, context: ToolContext): Promise<TResult> => {
    const value = await base.run(args, context);
    effects += 1;
    if (context.signal.aborted) lateEffects += 1;
    return value;
  };

  const run = async (args: TArgs, context: ToolContext): Promise<TResult> => {
    calls += 1;
    contexts.push(context);
    switch (options.mode) {
      case "hang":
        // Ignores the signal on purpose: this is the handler that never listens.
        await new Promise<void>((resolve) => setTimeout(resolve, delayMs).unref?.());
        return effect(args, context);
      case "slow":
        await abortableDelay(delayMs, context.signal);
        return effect(args, context);
      case "fail-times":
        if (calls <= times) {
          failures += 1;
          throw new ToolError(
            `${base.name} failed on purpose (call ${calls} of ${times} failing calls)`,
            { transient },
          );
        }
        return effect(args, context);
      case "fail-always":
        failures += 1;
        throw new ToolError(`${base.name} failed on purpose (call ${calls})`, { transient });
    }
  };

  const wrapped = {
    name: base.name,
    description: base.description,
    sensitive: base.sensitive,
    idempotent: base.idempotent,
    timeoutMs: base.timeoutMs,
    costUsd: base.costUsd,
    spec: base.spec,
    parse: (args: unknown) => base.parse(args),
    run,
  };
  Object.defineProperties(wrapped, {
    calls: { get: () => calls, enumerable: true },
    failures: { get: () => failures, enumerable: true },
    effects: { get: () => effects, enumerable: true },
    lateEffects: { get: () => lateEffects, enumerable: true },
    contexts: { get: () => contexts, enumerable: true },
  });
  return wrapped as FaultyTool<TArgs, TResult>;
}

/** A tool that ignores its signal and finishes after `delayMs` (default 10 s). */
export function hangingTool<TArgs, TResult>(
  base: Tool<TArgs, TResult>,
  delayMs = 10_000,
): FaultyTool<TArgs, TResult> {
  return faultyTool(base, { mode: "hang", delayMs });
}

/** A tool that answers after `delayMs`, or stops early when its signal aborts. */
export function slowTool<TArgs, TResult>(
  base: Tool<TArgs, TResult>,
  delayMs: number,
): FaultyTool<TArgs, TResult> {
  return faultyTool(base, { mode: "slow", delayMs });
}

/** A tool whose first `times` calls fail (transiently unless told otherwise). */
export function flakyTool<TArgs, TResult>(
  base: Tool<TArgs, TResult>,
  times: number,
  options: { transient?: boolean } = {},
): FaultyTool<TArgs, TResult> {
  return faultyTool(base, {
    mode: "fail-times",
    times,
    ...(options.transient !== undefined ? { transient: options.transient } : {}),
  });
}

/** A tool that always fails (transiently unless told otherwise). */
export function failingTool<TArgs, TResult>(
  base: Tool<TArgs, TResult>,
  options: { transient?: boolean } = {},
): FaultyTool<TArgs, TResult> {
  return faultyTool(base, {
    mode: "fail-always",
    ...(options.transient !== undefined ? { transient: options.transient } : {}),
  });
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
