import type { AppliedContextEdit } from "../contracts/model.js";
import { loopbackTokenCount } from "./loopback-token-count.js";

/** The beta a request with `context_management` must name in `anthropic-beta`. */
const contextManagementBeta = "context-management-2025-06-27";

/** The edit types the API knows; the loopback server applies the first one. */
const knownEditTypes = ["clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112"];

/** The text a cleared tool result becomes in the prompt the loopback model reads. */
export const loopbackClearedPlaceholder = "[tool result cleared by context management]";

/** The prompt after the server-side edits, and what they cleared. */
export interface LoopbackEdited {
  /** The request body as the model reads it (the same object when nothing was cleared). */
  body: unknown;
  applied: AppliedContextEdit[];
}

type Block = Record<string, unknown> & { type?: unknown };
type Edit = Record<string, unknown>;

/**
 * Applies a request's `context_management.edits` as the Messages API does for
 * `clear_tool_uses_20250919`: when the prompt is past `trigger` (default 100 000 input tokens,
 * or a count of tool uses), the results of every tool use but the last `keep` (default 3) and
 * those of `exclude_tools` become a placeholder (and their inputs `{}` with
 * `clear_tool_inputs`), unless that frees fewer than `clear_at_least` tokens. Returns the API's
 * 400 message for an edit it would refuse: an unknown type, a missing beta header, a type the
 * loopback server does not implement (`compact_20260112`). `clear_thinking_20251015` is accepted
 * and applies nothing (the loopback model writes no thinking blocks).
 */
export function applyLoopbackEdits(
  body: unknown,
  betaHeader: string | undefined,
): LoopbackEdited | string {
  const management = (body as { context_management?: unknown }).context_management;
  if (management === undefined || management === null) return { body, applied: [] };
  const betas = (betaHeader ?? "").split(",").map((name) => name.trim());
  if (!betas.includes(contextManagementBeta))
    return "context_management: Extra inputs are not permitted";
  const edits = (management as { edits?: unknown }).edits;
  if (typeof management !== "object" || !Array.isArray(edits))
    return "context_management.edits: Input should be a valid list";
  let current = body;
  const applied: AppliedContextEdit[] = [];
  for (const [index, edit] of (edits as Edit[]).entries()) {
    const type = edit?.type;
    if (typeof type !== "string" || !knownEditTypes.includes(type))
      return `context_management.edits.${index}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${knownEditTypes.map((known) => `'${known}'`).join(", ")}`;
    // Thinking clearing is accepted and changes nothing: the loopback model writes no thinking
    // blocks, so a prompt it answers holds none to clear (clients such as the Claude Agent SDK
    // send this edit on every request).
    if (type === "clear_thinking_20251015") continue;
    if (type !== "clear_tool_uses_20250919")
      return `context_management.edits.${index}: messagesApiServer does not implement ${type} (only clear_tool_uses_20250919)`;
    const result = clearToolUses(current, edit, index);
    if (typeof result === "string") return result;
    current = result.body;
    if (result.applied) applied.push(result.applied);
  }
  return { body: current, applied };
}

function positive(value: unknown, name: string, least: number): number | string | undefined {
  if (value === undefined || value === null) return undefined;
  const inner = (value as { value?: unknown }).value;
  if (typeof inner !== "number" || !Number.isSafeInteger(inner) || inner < least)
    return `${name}.value: Input should be an integer of at least ${least}`;
  return inner;
}

function clearToolUses(
  body: unknown,
  edit: Edit,
  index: number,
): { body: unknown; applied?: AppliedContextEdit } | string {
  const at = `context_management.edits.${index}`;
  const trigger = edit.trigger as { type?: unknown } | undefined;
  const triggerValue = positive(trigger, `${at}.trigger`, 1) ?? 100_000;
  const keep = positive(edit.keep, `${at}.keep`, 0) ?? 3;
  const atLeast = positive(edit.clear_at_least, `${at}.clear_at_least`, 0) ?? 0;
  for (const value of [triggerValue, keep, atLeast]) if (typeof value === "string") return value;
  const exclude = new Set(
    Array.isArray(edit.exclude_tools) ? (edit.exclude_tools as string[]) : [],
  );
  const inputs = edit.clear_tool_inputs;
  const messages = ((body as { messages?: unknown }).messages ?? []) as {
    role: string;
    content: unknown;
  }[];
  const uses: { id: string; name: string }[] = [];
  for (const message of messages)
    if (Array.isArray(message.content))
      for (const block of message.content as Block[])
        if (block.type === "tool_use")
          uses.push({ id: String(block.id), name: String(block.name) });
  const before = loopbackTokenCount(body);
  const triggered =
    trigger?.type === "tool_uses"
      ? uses.length > (triggerValue as number)
      : before > (triggerValue as number);
  if (!triggered) return { body };
  const cleared = new Map<string, string>();
  for (const use of uses.slice(0, Math.max(0, uses.length - (keep as number))))
    if (!exclude.has(use.name)) cleared.set(use.id, use.name);
  if (cleared.size === 0) return { body };
  const clearInput = (name: string) =>
    inputs === true || (Array.isArray(inputs) && inputs.includes(name));
  let clearedUses = 0;
  const edited = messages.map((message) => {
    if (!Array.isArray(message.content)) return message;
    const content = (message.content as Block[]).map((block) => {
      if (block.type === "tool_result" && cleared.has(String(block.tool_use_id))) {
        if (block.content === loopbackClearedPlaceholder) return block;
        clearedUses += 1;
        return { ...block, content: loopbackClearedPlaceholder };
      }
      if (
        block.type === "tool_use" &&
        cleared.has(String(block.id)) &&
        clearInput(String(block.name))
      )
        return { ...block, input: {} };
      return block;
    });
    return { ...message, content };
  });
  const next = { ...(body as Record<string, unknown>), messages: edited };
  const saved = before - loopbackTokenCount(next);
  if (clearedUses === 0 || saved < (atLeast as number)) return { body };
  return {
    body: next,
    applied: {
      type: "clear_tool_uses_20250919",
      cleared_tool_uses: clearedUses,
      cleared_input_tokens: saved,
    },
  };
}
