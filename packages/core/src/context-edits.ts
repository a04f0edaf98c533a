import type { Message, ToolResultBlock } from "./contracts/model.js";
import type { ClearedToolResult } from "./events.js";

/**
 * The conversation with the given tool results replaced by their stubs (a `context-edited`
 * event applied). Only the messages that change are copied. Returns the ids it could not find
 * (a log that cannot be this run's).
 */
export function withClearedResults(
  messages: readonly Message[],
  cleared: readonly ClearedToolResult[],
): { messages: Message[]; missing: string[] } {
  const stubs = new Map(cleared.map((entry) => [entry.toolUseId, entry.stub]));
  const out = messages.slice();
  for (let index = 0; index < out.length; index += 1) {
    const message = out[index]!;
    if (message.role !== "user" || typeof message.content === "string") continue;
    if (
      !message.content.some((block) => block.type === "tool_result" && stubs.has(block.tool_use_id))
    )
      continue;
    out[index] = {
      role: "user",
      content: message.content.map((block) => {
        if (block.type !== "tool_result") return block;
        const stub = stubs.get(block.tool_use_id);
        if (stub === undefined) return block;
        stubs.delete(block.tool_use_id);
        const edited: ToolResultBlock = {
          type: "tool_result",
          tool_use_id: block.tool_use_id,
          content: stub,
        };
        if (block.is_error) edited.is_error = true;
        return edited;
      }),
    };
  }
  return { messages: out, missing: [...stubs.keys()] };
}

/** The text of the user turn that holds a compaction's summary. */
export function summaryTurnText(summary: string): string {
  return `<context-summary>\nThe earlier turns of this conversation were replaced by this summary, which you wrote when the context window filled up. Tool results it does not restate are gone; call a tool again to see one.\n\n${summary}\n</context-summary>`;
}

/**
 * The conversation after a compaction: the first user turn, the summary as a user turn, then
 * the messages after the `replaced` ones. Throws a message when the cut is not at an
 * assistant turn (a tool result would lose its call).
 */
export function withSummary(
  messages: readonly Message[],
  replaced: number,
  summary: string,
): Message[] | string {
  const kept = messages.slice(1 + replaced);
  if (replaced < 1 || kept.length === 0 || kept[0]!.role !== "assistant")
    return `a compaction replacing ${replaced} messages of ${messages.length} does not leave an assistant turn after the summary`;
  return [
    messages[0]!,
    { role: "user", content: [{ type: "text", text: summaryTurnText(summary) }] },
    ...kept,
  ];
}

/**
 * How many messages after the first user turn a compaction replaces: everything before the
 * last `keepTurns` assistant turns (0 when there is nothing that old).
 */
export function compactionCut(messages: readonly Message[], keepTurns: number): number {
  let seen = 0;
  for (let index = messages.length - 1; index >= 1; index -= 1) {
    if (messages[index]!.role !== "assistant") continue;
    seen += 1;
    if (seen === keepTurns) return index - 1;
  }
  return 0;
}
