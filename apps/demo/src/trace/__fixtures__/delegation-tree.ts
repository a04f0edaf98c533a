/**
 * A real three-level delegation tree for the viewer's tests: a triage agent calls
 * `ask_researcher` (the researcher agent through `asTool`), whose model calls `ask_checker`
 * (the checker agent), which reads a scan log. Scripted models, one store, a fake clock.
 */
import {
  childRunId as childRunIdOf,
  createAgent,
  type EventStore,
  type StoredEvent,
  tool,
} from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import { allow, argGt, ask, policy } from "@loopguard/policy";
import * as v from "valibot";

export const rootRunId = "run_tree_root";
export const childRunId = childRunIdOf(rootRunId, "toolu_r1");
export const grandchildRunId = childRunIdOf(childRunId, "toolu_c1");

const call = (id: string, name: string, input: Record<string, unknown>) => ({
  content: [{ type: "tool_use" as const, id, name, input }],
  usage: { input_tokens: 400, output_tokens: 30 },
});
const say = (text: string) => ({
  content: text,
  usage: { input_tokens: 500, output_tokens: 20 },
});

/** Runs the tree (in `store`, default a memory store) and returns its three logs, by run id. */
export async function delegationTree(
  store: EventStore = memoryEventStore(),
): Promise<Map<string, StoredEvent[]>> {
  let clock = Date.UTC(2026, 11, 2, 9, 0, 0);
  const now = () => {
    clock += 50;
    return clock;
  };
  const scanLog = tool({
    name: "read_scan_log",
    description: "Reads the courier's scan log of an order.",
    input: v.object({ order_id: v.string() }),
    trust: "trusted",
    run: ({ order_id }) => ({ order_id, scans: ["picked", "dropped at depot", "delivered"] }),
  });
  const checker = createAgent({
    agentId: "checker",
    store,
    now,
    model: scriptedModel([
      call("toolu_g1", "read_scan_log", { order_id: "A1001" }),
      say("Dropped at the depot."),
    ]),
    tools: [scanLog],
  });
  const researcher = createAgent({
    agentId: "researcher",
    store,
    now,
    model: scriptedModel([
      call("toolu_c1", "ask_checker", { task: "Check the courier's scan log for A1001" }),
      say("The courier dropped it."),
    ]),
    tools: [checker.asTool({ name: "ask_checker", description: "Checks courier scan logs." })],
  });
  const triage = createAgent({
    agentId: "triage",
    store,
    now,
    budget: { maxUsd: 1 },
    model: scriptedModel([
      call("toolu_r1", "ask_researcher", { task: "Why did order A1001 arrive broken?" }),
      say("The courier dropped it; refund approved."),
    ]),
    tools: [
      researcher.asTool({ name: "ask_researcher", description: "Researches what happened." }),
    ],
  });
  const result = await triage.run("Order A1001 arrived broken; find out what happened", {
    runId: rootRunId,
  });
  if (result.status !== "completed")
    throw new Error(`the tree fixture's run ended ${result.status}: ${result.why}`);
  const logs = new Map<string, StoredEvent[]>();
  for (const runId of [rootRunId, childRunId, grandchildRunId])
    logs.set(runId, [...(await store.read(runId))]);
  return logs;
}

export const parkedRootRunId = "run_tree_parked";
export const parkedChildRunId = childRunIdOf(parkedRootRunId, "toolu_p1");

/**
 * A tree parked on an approval asked inside the child: the triage agent hands a $649 refund
 * to the refunds agent, whose policy asks a person first (durable approvals: both runs park).
 */
export async function parkedTree(store: EventStore): Promise<void> {
  await parkedTreeAgents(store).park();
}

/**
 * The agents of the parked tree, sharing `store`: `triage` (the root agent), the refunds it
 * made (`refunds`, one entry per refund tool run), and `park()`, which runs the tree until it
 * parks on the approval.
 */
export function parkedTreeAgents(store: EventStore) {
  const refunds: Array<{ order_id: string; amount: number }> = [];
  const refund = tool({
    name: "issue_refund",
    description: "Refunds an order.",
    input: v.object({ order_id: v.string(), amount: v.number() }),
    run: ({ order_id, amount }) => {
      refunds.push({ order_id, amount });
      return { order_id, amount, status: "refunded" };
    },
  });
  const refundsAgent = createAgent({
    agentId: "refunds",
    store,
    model: scriptedModel([
      call("toolu_rf", "issue_refund", { order_id: "A1002", amount: 649 }),
      say("Refunded $649."),
    ]),
    tools: [refund],
    gates: [policy([ask("issue_refund", { when: argGt("amount", 500) }), allow("*")])],
  });
  const triage = createAgent({
    agentId: "triage",
    store,
    approval: { durable: true },
    model: scriptedModel([
      call("toolu_p1", "ask_refunds", { task: "Refund order A1002 in full ($649)." }),
      say("Done."),
    ]),
    tools: [refundsAgent.asTool({ name: "ask_refunds", description: "Issues refunds." })],
  });
  const park = async () => {
    const result = await triage.run("The espresso grinder A1002 arrived smashed.", {
      runId: parkedRootRunId,
    });
    if (result.status !== "awaiting_approval")
      throw new Error(`the parked tree fixture ended ${result.status}: ${result.why}`);
  };
  return { triage, refunds, park };
}
