import type { Message, ToolResultBlock } from "./contracts/model.js";
import type { Vault } from "./contracts/vault.js";
import { sha256 } from "./digest.js";
import type { ClearedToolResult } from "./events.js";
import type { RunFold } from "./fold.js";

/** A result shorter than this is kept: its stub would save next to nothing and move the cache. */
const minClearChars = 600;

/** Candidate vault tokens (`<EMAIL_1>`); each is checked with the vault's `reveal`. */
const tokenPattern = /<[A-Z][A-Z0-9_]*_\d+>/g;

/**
 * The tool results a clearing replaces: every result not cleared yet, longer than a stub is
 * worth, except the last `keepLast`; each with the stub the model will see instead (the tool,
 * the call id, the result's size and SHA-256, and every mark it carried).
 */
export function planClearing(
  fold: RunFold,
  keepLast: number,
  vault: Vault | undefined,
): ClearedToolResult[] {
  const names = new Map<string, string>();
  const results: ToolResultBlock[] = [];
  for (const message of fold.messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "tool_use") names.set(block.id, block.name);
      else if (block.type === "tool_result" && !fold.clearedResults.has(block.tool_use_id))
        results.push(block);
    }
  }
  const old = results.slice(0, Math.max(0, results.length - keepLast));
  const marked = marksOf(fold);
  const cleared: ClearedToolResult[] = [];
  for (const block of old) {
    const text = typeof block.content === "string" ? block.content : JSON.stringify(block.content);
    if (text.length < minClearChars) continue;
    const tool = names.get(block.tool_use_id) ?? "unknown_tool";
    const marks = [...(marked.get(block.tool_use_id) ?? [])];
    if (block.is_error && !marks.includes("error")) marks.push("error");
    const tokens = vault ? vaultTokens(text, vault) : [];
    if (tokens.length > 0) marks.push(`vault tokens ${tokens.join(" ")}`);
    const digest = sha256(text).slice(0, 16);
    cleared.push({
      toolUseId: block.tool_use_id,
      tool,
      digest,
      chars: text.length,
      ...(marks.length > 0 ? { marks } : {}),
      stub: stubText(tool, block.tool_use_id, text.length, digest, marks),
    });
  }
  return cleared;
}

/** The text a cleared tool result becomes. */
export function stubText(
  tool: string,
  toolUseId: string,
  chars: number,
  digest: string,
  marks: readonly string[],
): string {
  const kept = marks.length > 0 ? ` Marks it carried: ${marks.join("; ")}.` : "";
  return `[tool result cleared to keep the context window: ${tool} call ${toolUseId}, ${chars} characters, sha256 ${digest}.${kept} Call ${tool} again if you need it.]`;
}

/** What the scanner, the gates and the trust level put on each tool result of the run. */
function marksOf(fold: RunFold): Map<string, string[]> {
  const marks = new Map<string, string[]>();
  for (const output of fold.state.outputs) {
    // A descendant's outputs are not in this run's conversation.
    if (!output.toolUseId || output.runId !== undefined) continue;
    const list: string[] = [];
    if (output.scan && output.scan.verdict !== "clean")
      list.push(
        `scanner verdict ${output.scan.verdict}${output.scan.rules.length > 0 ? ` (${output.scan.rules.join(", ")})` : ""}: its values stay tainted`,
      );
    if (output.trust === "untrusted") list.push("untrusted");
    marks.set(output.toolUseId, list);
  }
  for (const refusal of fold.state.refusals) {
    if (!refusal.toolUseId || refusal.runId !== undefined) continue;
    marks.set(refusal.toolUseId, [`refused (${refusal.reason})`]);
  }
  return marks;
}

/** The distinct vault tokens in a text, in order of appearance. */
function vaultTokens(text: string, vault: Vault): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(tokenPattern)) {
    const token = match[0];
    if (found.has(token)) continue;
    try {
      if (vault.reveal(token) !== token) found.add(token);
    } catch {
      // A vault that cannot reveal a token leaves it unmarked; the stub still names the digest.
    }
  }
  return [...found];
}

/** Messages of the conversation (for tests): the tool results that are stubs now. */
export function clearedIds(messages: readonly Message[]): string[] {
  const ids: string[] = [];
  for (const message of messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content)
      if (
        block.type === "tool_result" &&
        typeof block.content === "string" &&
        block.content.startsWith("[tool result cleared")
      )
        ids.push(block.tool_use_id);
  }
  return ids;
}
