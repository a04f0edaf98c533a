import { planClearing } from "./context-clearing.js";
import { compactContext } from "./context-compaction.js";
import { compactionCut } from "./context-edits.js";
import { estimatePromptTokens, messagesBytes, tokensPerByte } from "./context-estimate.js";
import type { ResolvedContextWindow } from "./context-window-options.js";
import type { ModelRequest, ToolSpec } from "./contracts/model.js";
import { LoopguardError } from "./errors.js";
import type { ContextEditedEvent } from "./events.js";
import type { LoopContext } from "./loop-context.js";
import { revealThinking } from "./model-step.js";
import type { RunWriter } from "./run-writer.js";

/**
 * When a clearing finds that the turns a compaction would replace (stubs and older turns,
 * which clearing cannot shrink) hold this share of the clearing threshold or more, compaction
 * (when configured) runs now: otherwise clearing would run again within fewer and fewer
 * steps, moving the cache each time.
 */
const compactableShare = 0.25;

/** The estimate within this share of the window is checked with the model's count-tokens endpoint. */
const countMargin = 0.05;

/** The conversation cannot be brought under the context window: the run fails, nothing is sent. */
export class ContextWindowError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.ContextWindowError";
  constructor(message: string) {
    super("context_window", message);
  }
}

/**
 * Keeps the next request inside the context window, before each model step: finishes a
 * compaction a crashed process left open, clears older tool results past
 * `clearToolResults.atFraction`, compacts past `compact.atFraction` or when the turns it would
 * replace hold a quarter of the clearing threshold (clearing when compaction fails),
 * and, when the estimate is within 5% of the window, counts exactly (where the model can) and
 * clears all but the last result rather than send a request over it. Every edit is an event,
 * so a resumed run rebuilds the same conversation. Throws `ContextWindowError` when even that
 * does not fit.
 */
export async function manageContext(
  loop: LoopContext,
  window: ResolvedContextWindow,
  writer: RunWriter,
  signal: AbortSignal,
): Promise<void> {
  const fold = writer.fold;
  const limit = window.maxInputTokens;
  const estimate = () => estimatePromptTokens(loop.fixedBytes, fold);
  const fallbackKeep = window.clear?.keepLast ?? 1;
  const orphan = fold.orphanCompaction;
  if (orphan && !window.compact)
    // Resumed by an agent without compaction: the call left open is given up, not re-issued.
    await writer.write({
      type: "context-compaction-failed",
      step: orphan.step,
      model: orphan.model,
      reason: "model_error",
      message:
        "[core] the run was resumed by an agent without contextWindow.compact; the compaction call left open by the previous process was not re-issued",
    });
  if (orphan && window.compact) {
    const done = await compactContext(loop, window.compact, writer, signal, orphan);
    if (!done)
      await clearResults(loop, window, writer, fallbackKeep, "compaction_failed", estimate());
  }
  // A clearing that finds stubs and old turns piled up hands over to compaction. With
  // `where: "server"` the API clears (the estimate follows its reported counts): no client edit.
  let clearingFellShort = false;
  if (
    window.clear &&
    window.clear.where === "client" &&
    estimate() >= window.clear.atFraction * limit
  ) {
    await clearResults(loop, window, writer, window.clear.keepLast, "threshold", estimate());
    clearingFellShort =
      window.compact !== undefined &&
      compactableTokens(loop, window.compact.keepTurns, writer) >=
        compactableShare * window.clear.atFraction * limit;
  }
  if (window.compact && (clearingFellShort || estimate() >= window.compact.atFraction * limit)) {
    // "Nothing old enough to summarise" is logged once, and tried again when a turn is.
    const blocked =
      fold.nothingToCompact && compactionCut(fold.messages, window.compact.keepTurns) < 1;
    const done = !blocked && (await compactContext(loop, window.compact, writer, signal));
    if (!done)
      await clearResults(loop, window, writer, fallbackKeep, "compaction_failed", estimate());
  }
  let tokens = estimate();
  if (tokens < limit * (1 - countMargin)) return;
  const counted = await countTokens(loop, writer, signal);
  if (counted !== undefined) tokens = counted;
  if (tokens <= limit) return;
  await clearResults(loop, window, writer, 1, "over_limit", tokens, counted !== undefined);
  tokens = estimate();
  if (tokens > limit) {
    const recount = await countTokens(loop, writer, signal);
    if (recount !== undefined) tokens = recount;
  }
  if (tokens > limit)
    throw new ContextWindowError(
      `[core] the next request needs about ${tokens} prompt tokens, over the context window of ${limit}, even with every tool result but the last cleared: raise contextWindow.maxInputTokens (a model with a larger window), add contextWindow.compact, or lower the tools' maxOutputChars`,
    );
}

/**
 * After the API refused a request as too long ("prompt is too long: N tokens > M maximum": the
 * estimate was wrong), clears every tool result but the last so the step can be sent again.
 * Returns `false` when the error is another one or there is nothing left to clear.
 */
export async function recoverFromOverflow(
  loop: LoopContext,
  window: ResolvedContextWindow,
  writer: RunWriter,
  error: unknown,
): Promise<boolean> {
  const message = String((error as Error)?.message ?? "");
  const match = /prompt is too long: (\d+) tokens/i.exec(message);
  if (!match) return false;
  const before = writer.fold.clearedResults.size;
  await clearResults(loop, window, writer, 1, "over_limit", Number(match[1]), true);
  return writer.fold.clearedResults.size > before;
}

/** Clears tool results older than the last `keepLast`; writes nothing when none is worth clearing. */
async function clearResults(
  loop: LoopContext,
  window: ResolvedContextWindow,
  writer: RunWriter,
  keepLast: number,
  reason: ContextEditedEvent["reason"],
  tokensBefore: number,
  counted = false,
): Promise<void> {
  const fold = writer.fold;
  const cleared = planClearing(fold, keepLast, loop.vault);
  if (cleared.length === 0) return;
  const event: ContextEditedEvent = {
    type: "context-edited",
    step: fold.steps + 1,
    edit: "clear_tool_results",
    reason,
    keepLast,
    cleared,
    tokensBefore,
    tokensAfter: 0,
    maxInputTokens: window.maxInputTokens,
    ...(counted ? { counted: true } : {}),
  };
  // The estimate after the edit, computed before it is written (the event is immutable once durable).
  // (Characters stand in for bytes: the figure is for the log, not a decision.)
  const saved = cleared.reduce((sum, entry) => sum + entry.chars - entry.stub.length, 0);
  const rate = tokensPerByte(loop.fixedBytes, fold);
  event.tokensAfter = Math.max(0, tokensBefore - Math.floor(saved * rate));
  await writer.write(event);
}

/** Estimated tokens of the turns a compaction would replace now. */
function compactableTokens(loop: LoopContext, keepTurns: number, writer: RunWriter): number {
  const fold = writer.fold;
  const cut = compactionCut(fold.messages, keepTurns);
  if (cut < 1) return 0;
  return messagesBytes(fold.messages.slice(1, 1 + cut)) * tokensPerByte(loop.fixedBytes, fold);
}

/** The exact prompt tokens of the next request, when the model can count; `undefined` otherwise. */
async function countTokens(
  loop: LoopContext,
  writer: RunWriter,
  signal: AbortSignal,
): Promise<number | undefined> {
  const model = loop.model;
  if (typeof model.countTokens !== "function") return undefined;
  const fold = writer.fold;
  const request: ModelRequest = {
    model: model.model,
    max_tokens: fold.start.maxTokens,
    ...(loop.system ? { system: loop.system } : {}),
    messages: loop.vault ? revealThinking(fold.messages, loop.vault) : fold.messages,
    ...(loop.toolSpecs.length > 0
      ? { tools: loop.toolSpecs as ToolSpec[], tool_choice: { type: "auto" as const } }
      : {}),
    // The count of the prompt after the server's edits, as the window applies to it.
    ...(loop.serverEdits ? { context_management: loop.serverEdits.management } : {}),
  };
  try {
    const tokens = await model.countTokens(request, { signal });
    return Number.isSafeInteger(tokens) && tokens >= 0 ? tokens : undefined;
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    loop.reportError(error, "model.countTokens");
    return undefined;
  }
}
