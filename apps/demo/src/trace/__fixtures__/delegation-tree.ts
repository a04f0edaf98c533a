/**
 * A three-level delegation tree for the viewer's tests, written by hand in the documented log
 * shapes: a triage run calls `ask_researcher` (a child run), whose researcher calls
 * `ask_checker` (a grandchild). Each run is a real run of core's loop (scripted model, fake
 * clock); the links (`run-start.parent`, `child-run-start`, `child-run-end`) are spliced into
 * the logs where a delegating run writes them.
 */
import { createAgent, type StoredEvent, tool } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";

export const rootRunId = "run_tree_root";
export const childRunId = `${rootRunId}.toolu_r1`;
export const grandchildRunId = `${childRunId}.toolu_c1`;

type Loose = Record<string, unknown>;

async function runOne(options: {
  runId: string;
  agentId: string;
  task: string;
  toolName: string;
  callId: string;
  answer: string;
  clock: { now: number };
}): Promise<StoredEvent[]> {
  const store = memoryEventStore();
  const agent = createAgent({
    agentId: options.agentId,
    store,
    model: scriptedModel([
      {
        content: [
          { type: "tool_use", id: options.callId, name: options.toolName, input: { task: "x" } },
        ],
        usage: { input_tokens: 400, output_tokens: 30 },
      },
      { content: options.answer, usage: { input_tokens: 500, output_tokens: 20 } },
    ]),
    tools: [
      tool({
        name: options.toolName,
        description: "Delegates.",
        input: v.object({ task: v.string() }),
        run: () => options.answer,
      }),
    ],
    now: () => {
      options.clock.now += 50;
      return options.clock.now;
    },
  });
  await agent.run(options.task, { runId: options.runId });
  return store.read(options.runId);
}

/** Inserts `extra` before the event at `index` and renumbers `seq`. */
function splice(events: StoredEvent[], index: number, extra: Loose[]): StoredEvent[] {
  const out = [...events.slice(0, index), ...(extra as unknown as StoredEvent[]), ...events.slice(index)];
  return out.map((event, seq) => ({ ...event, seq }));
}

function withParent(events: StoredEvent[], parent: Loose): StoredEvent[] {
  const [start, ...rest] = events;
  return [{ ...(start as StoredEvent), parent } as unknown as StoredEvent, ...rest];
}

function linkChild(
  events: StoredEvent[],
  link: { callId: string; tool: string; childRunId: string; agentId: string; depth: number },
  child: StoredEvent[],
): StoredEvent[] {
  const result = events.findIndex(
    (event) =>
      event.type === "tool-call-result" && (event as unknown as Loose).toolUseId === link.callId,
  );
  const intent = events.findIndex(
    (event) =>
      event.type === "tool-call-intent" && (event as unknown as Loose).toolUseId === link.callId,
  );
  const end = child.findLast((event) => event.type === "run-end") as Loose | undefined;
  const costUsd = child.reduce(
    (sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0),
    0,
  );
  const withEnd = splice(events, result, [
    {
      type: "child-run-end",
      callId: link.callId,
      childRunId: link.childRunId,
      status: end?.status ?? "running",
      costUsd,
      tokens: 950,
      steps: 2,
      at: Number(end?.at ?? 0),
    },
  ]);
  return splice(withEnd, intent + 1, [
    {
      type: "child-run-start",
      callId: link.callId,
      tool: link.tool,
      childRunId: link.childRunId,
      agentId: link.agentId,
      depth: link.depth,
      budget: { maxUsd: 1 },
      at: Number(child[0]?.at ?? 0),
    },
  ]);
}

/** The three logs of the tree, by run id. */
export async function delegationTree(): Promise<Map<string, StoredEvent[]>> {
  const clock = { now: Date.UTC(2026, 11, 2, 9, 0, 0) };
  const root = await runOne({
    runId: rootRunId,
    agentId: "triage",
    task: "Order A1001 arrived broken; find out what happened",
    toolName: "ask_researcher",
    callId: "toolu_r1",
    answer: "The courier dropped it; refund approved.",
    clock,
  });
  clock.now = Number(root[0]!.at) + 120;
  const child = await runOne({
    runId: childRunId,
    agentId: "researcher",
    task: "Why did order A1001 arrive broken?",
    toolName: "ask_checker",
    callId: "toolu_c1",
    answer: "The courier dropped it.",
    clock,
  });
  const grandchild = await runOne({
    runId: grandchildRunId,
    agentId: "checker",
    task: "Check the courier's scan log for A1001",
    toolName: "read_scan_log",
    callId: "toolu_g1",
    answer: "Dropped at the depot.",
    clock,
  });
  const linkedChild = linkChild(
    withParent(child, {
      runId: rootRunId,
      callId: "toolu_r1",
      tool: "ask_researcher",
      depth: 1,
      rootRunId,
    }),
    { callId: "toolu_c1", tool: "ask_checker", childRunId: grandchildRunId, agentId: "checker", depth: 2 },
    grandchild,
  );
  return new Map([
    [
      rootRunId,
      linkChild(
        root,
        { callId: "toolu_r1", tool: "ask_researcher", childRunId, agentId: "researcher", depth: 1 },
        child,
      ),
    ],
    [childRunId, linkedChild],
    [
      grandchildRunId,
      withParent(grandchild, {
        runId: childRunId,
        callId: "toolu_c1",
        tool: "ask_checker",
        depth: 2,
        rootRunId,
      }),
    ],
  ]);
}
