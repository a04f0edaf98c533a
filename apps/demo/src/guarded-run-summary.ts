import type { StoredEvent } from "@loopguard/core";
import type { Colors } from "./cli-context.js";

/** The `model` of a run opened by `withRun` (the MCP proxy's, an adapter's), not by the demo's loop. */
export const guardedRunModel = "loopguard:guard";

/** Whether a stored run is a guarded run (the MCP proxy's or an adapter's), not a demo loop run. */
export function isGuardedRun(events: readonly StoredEvent[]): boolean {
  const start = events[0];
  return start?.type === "run-start" && start.model === guardedRunModel;
}

/**
 * What `approve` and `runs` print for a guarded run, whatever server or tools it fronted: its
 * status (and why it ended), its calls (admitted, refused, with the reason), the approvals
 * still waiting with the command that answers each, and those answered or withdrawn. No line
 * is wider than 80 columns.
 */
export function guardedRunSummary(
  colors: Colors,
  runId: string,
  events: readonly StoredEvent[],
  dir: string,
): string[] {
  const start = events[0];
  const agent = start?.type === "run-start" ? start.agentId : "?";
  const end = events.findLast((event) => event.type === "run-end");
  const requests = new Map<string, { tool: string; reason: string }>();
  const answers = new Map<string, string>();
  const calls: string[] = [];
  let admitted = 0;
  let refused = 0;
  for (const event of events) {
    if (event.type === "tool-call-result") {
      admitted += 1;
      calls.push(
        `${event.tool}: ${event.isError ? `error (${event.errorKind ?? "tool_error"})` : "ok"}`,
      );
    } else if (event.type === "tool-call-refusal") {
      refused += 1;
      calls.push(`${event.tool}: refused (${event.decision.reason ?? "refused"})`);
    } else if (event.type === "approval-request")
      requests.set(event.requestId, { tool: event.tool, reason: event.reason });
    else if (event.type === "approval-decision")
      answers.set(
        event.requestId,
        `${event.decision}${event.approver ? ` by ${event.approver}` : ""}`,
      );
  }
  const status = end
    ? `${end.status} (${end.why})`
    : [...requests.keys()].some((id) => !answers.has(id))
      ? "awaiting_approval"
      : "running";
  const lines = [
    colors.bold(fit(`run ${runId}: ${status}`)),
    fit(`  agent ${agent}; ${admitted} call(s) made, ${refused} refused`),
  ];
  for (const call of calls.slice(-5)) lines.push(fit(`  - ${call}`));
  if (calls.length > 5) lines.push(`  (${calls.length - 5} earlier; loopguard trace ${runId})`);
  for (const [id, request] of requests) {
    const answer = answers.get(id);
    if (answer) lines.push(fit(`  approval ${id} (${request.tool}): ${answer}`));
    else {
      lines.push(fit(`  approval ${id} (${request.tool}, ${request.reason}) waits:`));
      lines.push(fit(`    loopguard approve ${runId} --request ${id} --dir ${dir}`));
    }
  }
  if (end?.error) lines.push(fit(`  ${end.error}`));
  return lines;
}

function fit(line: string): string {
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
