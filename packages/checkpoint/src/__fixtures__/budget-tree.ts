/**
 * A three-level delegation tree under one budget, for the crash tests: a root agent calls 5
 * managers at once (one turn), each manager calls 9 workers at once: 50 child runs. Every
 * model reply bills a large share of its `max_tokens` as output, so the tree as a whole would
 * cost several times the root's `maxUsd`: the cap binds, children run out of budget, and a
 * crash that lost track of some spend would show as a tree above the cap.
 */
import type { Agent, EventStore, ModelRequest, StoredEvent } from "@loopguard/core";
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel, type ScriptedReply } from "@loopguard/core/testing";
import * as v from "valibot";

/** The root's cap: about a third of what the tree would spend without one. */
export const treeCapUsd = 0.3;

/** The managers the root calls, and the workers each manager calls. */
export const treeShape = { managers: 5, workersPerManager: 9 } as const;

/** `max_tokens` of every call, and the output each reply bills (most of it). */
const maxTokens = 1_000;
const outputTokens = 800;

const toolResults = (request: ModelRequest) =>
  request.messages.flatMap((message) =>
    Array.isArray(message.content) ? message.content.filter((block) => block.type === "tool_result") : [],
  ).length;

/** A model that calls `count` copies of `toolName` at once on its first turn, then answers (a function of the request, so a resume gets the same replies). */
function fanOut(name: string, toolName: string, count: number, delayMs: number) {
  return scriptedModel(
    (request: ModelRequest): ScriptedReply => ({
      ...(delayMs ? { delayMs } : {}),
      usage: { input_tokens: 200, output_tokens: outputTokens },
      content:
        toolResults(request) === 0
          ? Array.from({ length: count }, (_, index) => ({
              type: "tool_use" as const,
              id: `toolu_${name}_${index}`,
              name: toolName,
              input: { task: `part ${index} for ${name}` },
            }))
          : `${name} is done.`,
    }),
  );
}

/** The tree's root agent, every run in `store`. */
export function budgetTree(
  store: EventStore,
  options: { delayMs?: number; capUsd?: number; onEvent?: (event: StoredEvent) => void } = {},
): Agent {
  const delayMs = options.delayMs ?? 0;
  const onEvent = options.onEvent ? { onEvent: options.onEvent } : {};
  const note = tool({
    name: "note",
    description: "Write a note.",
    input: v.object({}),
    idempotent: true,
    run: async () => "noted",
  });
  const worker = createAgent({
    agentId: "worker",
    store,
    maxTokens,
    tools: [note],
    ...onEvent,
    model: scriptedModel(
      (request: ModelRequest): ScriptedReply => ({
        ...(delayMs ? { delayMs } : {}),
        usage: { input_tokens: 200, output_tokens: outputTokens },
        content:
          toolResults(request) === 0
            ? [{ type: "tool_use", id: "toolu_note", name: "note", input: {} }]
            : "worker is done.",
      }),
    ),
  });
  const manager = createAgent({
    agentId: "manager",
    store,
    maxTokens,
    tools: [worker.asTool({ name: "worker", description: "Does one part." })],
    ...onEvent,
    model: fanOut("manager", "worker", treeShape.workersPerManager, delayMs),
  });
  return createAgent({
    agentId: "root",
    store,
    maxTokens,
    budget: { maxUsd: options.capUsd ?? treeCapUsd },
    tools: [manager.asTool({ name: "manager", description: "Runs a team of workers." })],
    ...onEvent,
    model: fanOut("root", "manager", treeShape.managers, delayMs),
  });
}

/**
 * What every run of a store may have been billed: each response's, retry's and error's cost,
 * plus the worst case of every request with no answer in the log (a call in flight when the
 * process died may have been billed all the same).
 */
export function billedUsd(events: readonly StoredEvent[]): number {
  let usd = 0;
  let open: number | undefined;
  for (const event of events) {
    if (event.type === "model-request") {
      usd += open ?? 0;
      open = event.estimateUsd;
    } else if (event.type === "model-response" || event.type === "model-error") {
      usd += event.costUsd ?? 0;
      open = undefined;
    } else if (event.type === "model-retry") usd += event.costUsd ?? 0;
  }
  return usd + (open ?? 0);
}
