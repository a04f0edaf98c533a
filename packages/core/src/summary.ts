import type { RunSummary, StoredEvent } from "./contracts/event-store.js";

/**
 * Updates a run's summary (for `list`) with newly appended events. Stores call this on append
 * so listing never has to read whole logs.
 */
export function summarize(
  previous: RunSummary | undefined,
  runId: string,
  events: readonly StoredEvent[],
): RunSummary {
  const summary: RunSummary = previous
    ? { ...previous }
    : {
        runId,
        status: "running",
        steps: 0,
        costUsd: 0,
        events: 0,
        createdAt: events[0]?.at ?? Date.now(),
        updatedAt: events[0]?.at ?? Date.now(),
      };
  summarizeInto(summary, events);
  return summary;
}

/**
 * Updates a summary in place with newly appended events (for a store that owns its summaries
 * and hands out copies): no new object per append.
 */
export function summarizeInto(summary: RunSummary, events: readonly StoredEvent[]): void {
  for (const event of events) {
    summary.events = Math.max(summary.events, event.seq + 1);
    summary.updatedAt = Math.max(summary.updatedAt, event.at);
    switch (event.type) {
      case "run-start":
        summary.agentId = event.agentId;
        summary.task = event.task.length > 120 ? `${event.task.slice(0, 117)}...` : event.task;
        summary.createdAt = event.at;
        if (event.parent) {
          summary.parentRunId = event.parent.runId;
          summary.rootRunId = event.parent.rootRunId;
          summary.depth = event.parent.depth;
        }
        break;
      case "child-run-wait":
        // The parent parks with its child: on the child's approval, or while it runs elsewhere.
        summary.status = event.status;
        break;
      case "child-run-end":
        // The child's spend is the parent's (one budget for the tree).
        summary.costUsd += event.costUsd;
        break;
      case "model-response":
        summary.steps = event.step;
        summary.costUsd += event.costUsd;
        break;
      case "context-compacted":
      case "context-compaction-failed":
        // A compaction call is spend like a step.
        summary.costUsd += event.costUsd ?? 0;
        break;
      case "approval-request":
        summary.status = "awaiting_approval";
        break;
      case "approval-decision":
      case "run-resume":
        summary.status = "running";
        break;
      case "run-end":
        summary.status = event.status;
        break;
      case "shadow-decision":
        summary.shadowDifferences = (summary.shadowDifferences ?? 0) + 1;
        break;
      default:
        break;
    }
  }
}
