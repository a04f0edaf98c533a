import type { StoredEvent } from "./contracts/event-store.js";
import type { ContentBlock, Usage } from "./contracts/model.js";
import type { RunResult } from "./run-result.js";

/**
 * One event of `agent.stream()`, in the order the run produced it. Text and thinking have
 * passed through the vault and redaction; tool calls appear only once their block is complete
 * and parsed.
 */
export type AgentStreamEvent = AgentStreamEventBody & {
  /**
   * Set on the events of a child run (an `asTool` call) forwarded into its parent's stream:
   * 1 for a child, 2 for a grandchild; `runId` names the child run. Absent on the run's own.
   */
  depth?: number;
};

/** The events of `agent.stream()`, without the child-run tag. */
export type AgentStreamEventBody =
  /** Answer text as it is written (already tokenised and redacted). */
  | { type: "text-delta"; runId: string; step: number; index: number; text: string }
  /** Thinking as it is written; only with `thinking: true`, and then as a redacted copy. */
  | { type: "thinking-delta"; runId: string; step: number; index: number; thinking: string }
  /** A complete, parsed tool call, before any gate judged it. */
  | {
      type: "tool-call";
      runId: string;
      step: number;
      toolUseId: string;
      tool: string;
      input: unknown;
    }
  /** What the gates made of a tool call. */
  | {
      type: "decision";
      runId: string;
      step: number;
      toolUseId: string;
      tool: string;
      decision: "admitted" | "refused" | "asked";
      reason?: string;
      message?: string;
    }
  /** A tool's result, as the model will see it. */
  | {
      type: "tool-result";
      runId: string;
      step: number;
      toolUseId: string;
      tool: string;
      isError: boolean;
      content: string;
    }
  /** A model step ended: its usage and cost. */
  | {
      type: "step-end";
      runId: string;
      step: number;
      usage: Usage;
      costUsd: number;
      stopReason: string | null;
    }
  /**
   * A stream failed after text was shown: discard what this step showed so far; the step is
   * retried from the start (and will stream again).
   */
  | { type: "stream-reset"; runId: string; step: number; attempt: number; reason: string }
  /**
   * Older turns were replaced by a summary to keep the context window (redacted like every
   * streamed text); `tokensBefore`/`tokensAfter` are the estimated prompt tokens of the next request.
   */
  | {
      type: "context-compacted";
      runId: string;
      step: number;
      replaced: number;
      tokensBefore: number;
      tokensAfter: number;
      costUsd: number;
      summary: string;
    }
  /**
   * Older tool results were replaced by stubs to keep the context window (`source: "server"`:
   * the API cleared `clearedToolUses` results server-side; `cleared` is then empty).
   */
  | {
      type: "context-edited";
      runId: string;
      step: number;
      source: "client" | "server";
      clearedToolUses: number;
      cleared: string[];
      tokensBefore: number;
      tokensAfter: number;
    }
  /** The run ended (or parked): the same status and answer as `stream.result`. */
  | { type: "run-end"; runId: string; status: string; answer: string };

/** Options of `agent.stream()` besides the run options. */
export interface AgentStreamOptions {
  /** Emit `thinking-delta` events (redacted copies of the model's thinking). Default `false`. */
  thinking?: boolean;
}

/** What `agent.stream()` returns: the events as they come, and the run's result. */
export type AgentStream = AsyncIterable<AgentStreamEvent> & {
  /** The run's result, as `agent.run()` would return it; rejects only where `run()` would throw. */
  result: Promise<RunResult>;
};

/** A sink the loop writes stream events into. */
export interface AgentStreamSink {
  /** Adds an event; a no-op once the host stopped reading. */
  push(event: AgentStreamEvent): void;
  /** Whether thinking deltas were asked for. */
  readonly thinking: boolean;
}

/**
 * Makes the host-facing stream of one run: `start` runs it with a sink; events are queued
 * until the host reads them (the queue holds at most what the run produced, and is dropped as
 * soon as the host stops reading). Iterating is optional: `result` resolves either way.
 */
export function createAgentStream(
  start: (sink: AgentStreamSink) => Promise<RunResult>,
  options: AgentStreamOptions = {},
): AgentStream {
  const queue: AgentStreamEvent[] = [];
  let head = 0;
  let waiting: (() => void) | undefined;
  let finished = false;
  let abandoned = false;
  const wake = () => {
    const resume = waiting;
    waiting = undefined;
    resume?.();
  };
  const sink: AgentStreamSink = {
    thinking: options.thinking === true,
    push(event) {
      if (abandoned || finished) return;
      queue.push(event);
      wake();
    },
  };
  const result = Promise.resolve()
    .then(() => start(sink))
    .finally(() => {
      finished = true;
      wake();
    });
  // A host that only iterates must not get an unhandled rejection from `result`.
  result.catch(() => undefined);

  return {
    result,
    [Symbol.asyncIterator](): AsyncIterator<AgentStreamEvent> {
      return {
        async next() {
          for (;;) {
            if (head < queue.length) {
              const value = queue[head]!;
              head += 1;
              if (head > 1024 && head * 2 > queue.length) {
                queue.splice(0, head);
                head = 0;
              }
              return { value, done: false };
            }
            if (finished) {
              // A run that failed before it could end surfaces here too.
              await result;
              return { value: undefined, done: true };
            }
            await new Promise<void>((resolve) => {
              waiting = resolve;
            });
          }
        },
        async return() {
          abandoned = true;
          queue.length = 0;
          head = 0;
          return { value: undefined, done: true };
        },
      };
    },
  };
}

/**
 * The stream events a durable run event stands for (`decision`, `tool-result`, `step-end`,
 * `run-end`); the live events (`text-delta`, `tool-call`, `stream-reset`) come from the model
 * step. `redact` is the agent's redactor for anything the host sees.
 */
export function streamEventsOf(
  runId: string,
  event: StoredEvent,
  redact: ((value: unknown) => unknown) | undefined,
): AgentStreamEvent[] {
  const shown = <T>(value: T): T => (redact ? (redact(value) as T) : value);
  switch (event.type) {
    case "model-response":
      return [
        {
          type: "step-end",
          runId,
          step: event.step,
          usage: event.response.usage,
          costUsd: event.costUsd,
          stopReason: event.response.stop_reason,
        },
      ];
    case "context-compacted":
      return [
        {
          type: "context-compacted",
          runId,
          step: event.step,
          replaced: event.replaced,
          tokensBefore: event.tokensBefore,
          tokensAfter: event.tokensAfter,
          costUsd: event.costUsd,
          summary: shown(event.summary),
        },
      ];
    case "context-edited":
      return [
        {
          type: "context-edited",
          runId,
          step: event.step,
          source: event.source ?? "client",
          clearedToolUses: event.server?.clearedToolUses ?? event.cleared.length,
          cleared: event.cleared.map((entry) => entry.toolUseId),
          tokensBefore: event.tokensBefore,
          tokensAfter: event.tokensAfter,
        },
      ];
    case "tool-call-intent":
      return [
        {
          type: "decision",
          runId,
          step: event.step,
          toolUseId: event.toolUseId,
          tool: event.tool,
          decision: "admitted",
        },
      ];
    case "tool-call-refusal":
      return [
        {
          type: "decision",
          runId,
          step: event.step,
          toolUseId: event.toolUseId,
          tool: event.tool,
          decision: "refused",
          ...(event.decision.reason ? { reason: event.decision.reason } : {}),
          ...(event.decision.message ? { message: shown(event.decision.message) } : {}),
        },
      ];
    case "approval-request":
      return [
        {
          type: "decision",
          runId,
          step: event.step,
          toolUseId: event.toolUseId,
          tool: event.tool,
          decision: "asked",
          reason: event.reason,
          message: shown(event.message),
        },
      ];
    case "tool-call-result":
      return [
        {
          type: "tool-result",
          runId,
          step: event.step,
          toolUseId: event.toolUseId,
          tool: event.tool,
          isError: event.isError,
          content: shown(event.content),
        },
      ];
    case "run-end":
      return [{ type: "run-end", runId, status: event.status, answer: shown(event.answer) }];
    default:
      return [];
  }
}

/** The `tool-call` event for a complete `tool_use` block. */
export function toolCallEvent(
  runId: string,
  step: number,
  block: ContentBlock,
  redact: ((value: unknown) => unknown) | undefined,
): AgentStreamEvent | undefined {
  if (block.type !== "tool_use") return undefined;
  return {
    type: "tool-call",
    runId,
    step,
    toolUseId: block.id,
    tool: block.name,
    input: redact ? redact(block.input) : block.input,
  };
}
