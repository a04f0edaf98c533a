import type { StoredEventInput } from "../contracts/event-store.js";
import type { ToolCall } from "../contracts/gate.js";
import type { RunStatus } from "../events.js";
import { type RunContextInput, RunState } from "../run-state.js";

/**
 * Builders of realistic events (a run's log as the agent writes it), shared by the conformance
 * suites and by the tests of stores and tools that read logs.
 *
 * @example
 * const events = [eventBuilders.start("run_1", Date.now()), eventBuilders.end("completed", Date.now())];
 */
export const eventBuilders = {
  start(
    runId: string,
    at: number,
    options: { agentId?: string; task?: string } = {},
  ): StoredEventInput {
    return {
      type: "run-start",
      runId,
      agentId: options.agentId ?? "support",
      task: options.task ?? "Order A1001 arrived broken, refund please",
      model: "claude-sonnet-5-5",
      maxTokens: 1024,
      budget: { maxUsd: 0.5, maxSteps: 15 },
      policyDigest: "policy-digest",
      toolDigest: "tool-digest",
      at,
    };
  },
  request(step: number, at: number): StoredEventInput {
    return {
      type: "model-request",
      step,
      maxTokens: 1024,
      estimateUsd: 0.01,
      requestDigest: `digest-${step}`,
      at,
    };
  },
  response(step: number, at: number, text: string, costUsd = 0.0031): StoredEventInput {
    return {
      type: "model-response",
      step,
      response: {
        id: `msg_${step}`,
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: [{ type: "text", text }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: {
          input_tokens: 120,
          output_tokens: 30,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
      costUsd,
      latencyMs: 840,
      attempts: 1,
      at,
    };
  },
  result(step: number, at: number, content: string): StoredEventInput {
    return {
      type: "tool-call-result",
      step,
      toolUseId: `toolu_${step}`,
      tool: "lookup_order",
      status: "ok",
      content,
      isError: false,
      durationMs: 12,
      attempts: 1,
      at,
    };
  },
  end(status: Exclude<RunStatus, "running">, at: number, answer = "Done."): StoredEventInput {
    return {
      type: "run-end",
      status,
      answer,
      why: status === "completed" ? "end_turn" : "budget",
      at,
    };
  },
};

/** A complete small run: start, one model exchange, end. */
export function smallRun(
  runId: string,
  at: number,
  options: {
    agentId?: string;
    task?: string;
    status?: Exclude<RunStatus, "running">;
    costUsd?: number;
  } = {},
): StoredEventInput[] {
  return [
    eventBuilders.start(runId, at, options),
    eventBuilders.request(1, at + 1),
    eventBuilders.response(1, at + 2, "Your refund is on its way.", options.costUsd ?? 0.0031),
    eventBuilders.end(options.status ?? "completed", at + 3, "Your refund is on its way."),
  ];
}

let counter = 0;

/** A run as gates see it, for unit tests of gates (fresh ids each call). */
export function runStateOf(
  options: Omit<RunContextInput, "runId"> & { runId?: string } = {},
): RunState {
  counter += 1;
  return new RunState({
    ...options,
    runId: options.runId ?? `run_test_${process.pid}_${counter}`,
    agentId: options.agentId ?? "agent",
  });
}

/** A tool call as a gate sees it, for unit tests of gates (fresh tool-use id each call). */
export function toolCallOf(
  tool: string,
  args: Record<string, unknown> = {},
  options: { run?: RunState; sensitive?: boolean; idempotent?: boolean; toolUseId?: string } = {},
): ToolCall {
  counter += 1;
  const toolUseId = options.toolUseId ?? `toolu_test_${counter}`;
  return {
    tool,
    args,
    toolUseId,
    idempotencyKey: `${options.run?.runId ?? "no-run"}:${toolUseId}`,
    sensitive: options.sensitive ?? false,
    idempotent: options.idempotent ?? false,
    run: options.run,
  };
}
