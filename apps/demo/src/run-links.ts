import type { StoredEvent } from "@loopguard/core";

/** Where a child run came from: its parent run and the tool call that started it. */
export interface ParentLink {
  runId: string;
  /** The parent's tool call (its `tool_use` id) that started this run. */
  callId: string;
  /** The tool the parent called (the child agent's `asTool` name). */
  tool: string;
  /** 1 for a direct child of a root run. */
  depth: number;
  /** The run at the top of the tree. */
  rootRunId: string;
}

/** A child run as its parent's log records it. */
export interface ChildLink {
  runId: string;
  callId: string;
  tool: string;
  agentId?: string;
  depth?: number;
  /**
   * From `child-run-end`, or `child-run-wait` while the child is parked (`awaiting_approval`,
   * `awaiting_child`); `running` while the parent's log has neither.
   */
  status: string;
  /** `trusted` when the child read nothing but its task and trusted tools (from `child-run-end`). */
  trust?: string;
  /** The child's spend, when it ended (its spend also counts in the parent's). */
  costUsd?: number;
  steps?: number;
  error?: string;
}

/** The links of one run to the rest of its tree, read from its own log. */
export interface RunLinks {
  parent?: ParentLink;
  children: ChildLink[];
}

type Loose = Record<string, unknown>;

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;
const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;

/**
 * Reads a run's place in a delegation tree from its log: `run-start.parent` (this run is a
 * child) and the `child-run-start` / `child-run-end` pairs of the runs it started, in the
 * order they started. A field of the wrong type is left out, never guessed.
 *
 * @example
 * const { parent, children } = runLinksOf(await store.read(runId));
 */
export function runLinksOf(events: readonly StoredEvent[]): RunLinks {
  const links: RunLinks = { children: [] };
  const byRun = new Map<string, ChildLink>();
  const ended = new Set<string>();
  for (const item of events) {
    const event = item as unknown as Loose;
    if (event.type === "run-start") {
      const parent = event.parent as Loose | undefined;
      const runId = text(parent?.runId);
      if (parent && runId) {
        links.parent = {
          runId,
          callId: text(parent.callId) ?? "",
          tool: text(parent.tool) ?? "",
          depth: count(parent.depth) ?? 1,
          rootRunId: text(parent.rootRunId) ?? runId,
        };
      }
    } else if (event.type === "child-run-start") {
      const runId = text(event.childRunId);
      if (!runId) continue;
      const again = byRun.get(runId);
      if (again) {
        // A resumed parent continues the same child: it runs again until it ends or parks.
        if (!ended.has(runId)) again.status = "running";
        continue;
      }
      const agentId = text(event.agentId);
      const depth = count(event.depth);
      const child: ChildLink = {
        runId,
        callId: text(event.callId) ?? "",
        tool: text(event.tool) ?? "",
        ...(agentId ? { agentId } : {}),
        ...(depth !== undefined ? { depth } : {}),
        status: "running",
      };
      byRun.set(runId, child);
      links.children.push(child);
    } else if (event.type === "child-run-wait") {
      const runId = text(event.childRunId);
      const child = runId ? byRun.get(runId) : undefined;
      if (child && runId && !ended.has(runId)) child.status = text(event.status) ?? child.status;
    } else if (event.type === "child-run-end") {
      const runId = text(event.childRunId);
      const child = runId ? byRun.get(runId) : undefined;
      if (!child || !runId) continue;
      ended.add(runId);
      child.status = text(event.status) ?? child.status;
      const costUsd = count(event.costUsd);
      if (costUsd !== undefined) child.costUsd = costUsd;
      const trust = text(event.trust);
      if (trust) child.trust = trust;
      const steps = count(event.steps);
      if (steps !== undefined) child.steps = steps;
      const error = event.error;
      if (typeof error === "string" && error !== "") child.error = error;
      else if (error && typeof error === "object" && text((error as Loose).message))
        child.error = String((error as Loose).message);
    }
  }
  return links;
}
