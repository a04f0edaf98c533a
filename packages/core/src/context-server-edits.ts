import type { ClearToolUsesEdit, ModelResponse } from "./contracts/model.js";
import type { ContextEditedEvent } from "./events.js";
import type { RunWriter } from "./run-writer.js";

/** What the model step sends and records when the API clears tool results server-side. */
export interface ServerContextEdits {
  /** The `context_management` of every request. */
  management: { edits: ClearToolUsesEdit[] };
  maxInputTokens: number;
  keepLast: number;
}

/**
 * Logs each clearing the API reported for a step's request (`context_management.applied_edits`)
 * as a `context-edited` event with `source: "server"`: the request bytes did not change, so
 * the log says what the model did not read. Writes nothing when the API cleared nothing.
 */
export async function recordServerEdits(
  writer: RunWriter,
  step: number,
  response: ModelResponse,
  edits: ServerContextEdits,
): Promise<void> {
  const applied = response.context_management?.applied_edits;
  if (!Array.isArray(applied) || applied.length === 0) return;
  const usage = response.usage;
  const prompt =
    usage.input_tokens +
    (usage.cache_creation_input_tokens ?? 0) +
    (usage.cache_read_input_tokens ?? 0);
  for (const entry of applied) {
    const clearedInputTokens = whole(entry?.cleared_input_tokens);
    const clearedToolUses = whole(entry?.cleared_tool_uses);
    if (clearedInputTokens === 0 && clearedToolUses === 0) continue;
    const event: ContextEditedEvent = {
      type: "context-edited",
      source: "server",
      step,
      edit: "clear_tool_results",
      reason: "threshold",
      keepLast: edits.keepLast,
      cleared: [],
      tokensBefore: prompt + clearedInputTokens,
      tokensAfter: prompt,
      maxInputTokens: edits.maxInputTokens,
      server: { type: String(entry.type), clearedToolUses, clearedInputTokens },
    };
    await writer.write(event);
  }
}

function whole(value: unknown): number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0;
}
