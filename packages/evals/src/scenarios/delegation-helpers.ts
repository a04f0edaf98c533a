import {
  type Agent,
  type ContentBlock,
  type ModelRequest,
  type StoredEvent,
  type Tool,
  ToolError,
  type ToolResultBlock,
  tool,
} from "@loopguard/core";
import { type ScriptedModel, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import type { ScenarioContext } from "../scenario.js";
import type { SupportDesk } from "../support-desk/support-desk.js";

/** A tool call a scripted model makes. */
export interface ScriptedCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** Options of a delegating tool in the scorecard. */
export interface DelegateOptions {
  name: string;
  description: string;
  budget?: { maxUsd?: number; maxSteps?: number; maxTokens?: number };
  share?: number;
}

/**
 * The delegating tool of a scenario: `child.asTool(options)`, or with the sabotage
 * `delegation`, what agents-as-tools are without loopguard's link: a tool whose body runs the
 * child agent as a second, unrelated run (its own id, budget, gates, trace and log) and
 * returns its answer, declared trusted as a team's own agent would be.
 */
export function delegate(
  t: ScenarioContext,
  child: Agent,
  options: DelegateOptions,
  // biome-ignore lint/suspicious/noExplicitAny: a tool list mixes tools of different argument and result types, as core's AgentOptions.tools does
): Tool<any, any> {
  if (!t.sabotage.includes("delegation")) return child.asTool(options);
  return tool({
    name: options.name,
    description: options.description,
    input: v.object({ task: v.string() }),
    trust: "trusted",
    run: async ({ task }) => {
      const result = await child.run(task);
      if (result.status !== "completed")
        throw new ToolError(`the ${options.name} agent ended ${result.status}`);
      return result.answer;
    },
  });
}

/** Every `tool_result` block the request carries. */
export function toolResultsOf(request: ModelRequest): ToolResultBlock[] {
  return request.messages.flatMap((message) =>
    message.role === "user" && Array.isArray(message.content)
      ? message.content.filter((block): block is ToolResultBlock => block.type === "tool_result")
      : [],
  );
}

/** The text of a tool result block. */
export function resultText(block: ToolResultBlock): string {
  const content = block.content as unknown;
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((part) => {
        const text = (part as { text?: unknown } | null)?.text;
        return typeof text === "string" ? text : "";
      })
      .join("");
  return "";
}

/**
 * A scripted manager: its first turn makes `first` (in parallel), its second turn what
 * `next` makes of the results (if anything), then it answers with the results' text. Its
 * choices are a pure function of the conversation, so a resumed run makes the same calls.
 */
export function managerModel(options: {
  first: ScriptedCall[];
  next?: (results: string[]) => ScriptedCall[];
}): ScriptedModel {
  return scriptedModel((request) => {
    const turns = request.messages.filter((message) => message.role === "assistant").length;
    const results = toolResultsOf(request).map(resultText);
    const calls =
      turns === 0 ? options.first : turns === 1 && options.next ? options.next(results) : [];
    if (calls.length > 0)
      return {
        content: calls.map(
          (call): ContentBlock => ({
            type: "tool_use",
            id: call.id,
            name: call.name,
            input: call.input,
          }),
        ),
      };
    return { content: `Done. ${results.join(" | ")}` };
  });
}

/** A trusted internal tool over the desk's order database (the order and its total only). */
// biome-ignore lint/suspicious/noExplicitAny: as above, for a tools list
export function orderDatabase(desk: SupportDesk): Tool<any, any> {
  return tool({
    name: "order_db",
    description: "Reads an order's item, total and status from the order database.",
    input: v.object({ order_id: v.string() }),
    trust: "trusted",
    idempotent: true,
    run: ({ order_id }) => {
      const order = desk.fixtures.orders.find((item) => item.id === order_id);
      if (!order) throw new ToolError(`No order ${order_id}.`);
      return { order_id: order.id, item: order.item, total: order.total, status: order.status };
    },
  });
}

/** The events of one type in a log. */
export function eventsOf<TType extends StoredEvent["type"]>(
  events: readonly StoredEvent[],
  type: TType,
): Extract<StoredEvent, { type: TType }>[] {
  return events.filter(
    (event): event is Extract<StoredEvent, { type: TType }> => event.type === type,
  );
}

/** Sums the model spend recorded in logs (every `model-response`), independent of core's totals. */
export function modelSpendOf(logs: readonly (readonly StoredEvent[])[]): number {
  let total = 0;
  for (const events of logs)
    for (const event of events) if (event.type === "model-response") total += event.costUsd;
  return total;
}
