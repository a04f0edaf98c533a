import * as v from "valibot";
import { tool } from "../tool.js";
import { type ScriptedModel, scriptedModel } from "./scripted-model.js";

/**
 * A `lookup_order` tool (argument `id`) that answers `order <id>: shipped`: the tool the
 * tool-loop tests of budgets and limits call.
 */
export const lookupOrderTool = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ id: v.string() }),
  run: async ({ id }) => `order ${id}: shipped`,
});

/** Token counts a `toolLoopModel` reports. */
export interface ToolLoopUsage {
  /** Input tokens of every reply. */
  input: number;
  /** Output tokens of each tool call (capped by the request's `max_tokens`); default 50. */
  call?: number;
  /** Output tokens of the final answer. */
  answer: number;
}

/**
 * A scripted model that calls `lookup_order` `calls` times (ids `toolu_1`, …, input
 * `{ id: "A<call>" }`), then answers `done`.
 *
 * @example
 * createAgent({ model: toolLoopModel(2, { input: 100, answer: 20 }), tools: [lookupOrderTool] });
 */
export function toolLoopModel(calls: number, usage: ToolLoopUsage): ScriptedModel {
  const callTokens = usage.call ?? 50;
  return scriptedModel(
    (request, call) =>
      call <= calls
        ? {
            content: [
              {
                type: "tool_use",
                id: `toolu_${call}`,
                name: "lookup_order",
                input: { id: `A${call}` },
              },
            ],
            usage: {
              input_tokens: usage.input,
              output_tokens: Math.min(callTokens, request.max_tokens),
            },
          }
        : {
            content: [{ type: "text", text: "done" }],
            usage: { input_tokens: usage.input, output_tokens: usage.answer },
          },
    { model: "claude-sonnet-5-5" },
  );
}

/** One tool call a `toolCallsModel` makes. */
export interface ScriptedCall {
  name: string;
  input: Record<string, unknown>;
}

/**
 * A scripted model that makes the given tool calls, one per turn (ids `toolu_1`, …), then
 * answers `done` (`stop_reason: "end_turn"`).
 */
export function toolCallsModel(calls: readonly ScriptedCall[]): ScriptedModel {
  return scriptedModel((_request, index) => {
    const next = calls[index - 1];
    if (!next) return { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" };
    return {
      content: [{ type: "tool_use", id: `toolu_${index}`, name: next.name, input: next.input }],
    };
  });
}

/**
 * A scripted model that asks for `call` (id `call.id`, default `toolu_1`) until a tool result is
 * in the conversation, then answers `answer`: the same reply however often a resumed run asks.
 */
export function callUntilResult(
  call: ScriptedCall & { id?: string },
  answer: string,
): ScriptedModel {
  return scriptedModel(
    (request) =>
      request.messages.some(
        (message) =>
          Array.isArray(message.content) &&
          message.content.some((block) => block.type === "tool_result"),
      )
        ? { content: answer }
        : {
            content: [
              { type: "tool_use", id: call.id ?? "toolu_1", name: call.name, input: call.input },
            ],
          },
    { copyRequests: false },
  );
}
