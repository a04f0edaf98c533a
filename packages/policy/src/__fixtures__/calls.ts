import { type ToolCall } from "@loopguard/core";
import { RunState } from "@loopguard/core/plugin";

let counter = 0;

/** A tool call as gates see it, for unit tests. */
export function callOf(tool: string, args: Record<string, unknown> = {}, run?: RunState): ToolCall {
  counter += 1;
  const toolUseId = `toolu_${counter}`;
  return { tool, args, toolUseId, idempotencyKey: `${run?.runId ?? "no-run"}:${toolUseId}`, sensitive: false, idempotent: false, run };
}

/** A run with roles, for unit tests. */
export function runOf(roles: string[] = [], agentId = "agent"): RunState {
  counter += 1;
  return new RunState({ runId: `run_${counter}`, agentId, roles });
}
