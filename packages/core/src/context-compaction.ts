import { compactionCut, summaryTurnText } from "./context-edits.js";
import { estimatePromptTokens, messagesBytes, tokensPerByte } from "./context-estimate.js";
import type { ResolvedContextWindow } from "./context-window-options.js";
import type { Message, ModelRequest, ModelResponse, ToolSpec, Usage } from "./contracts/model.js";
import type { ContextCompactionFailedEvent, ContextCompactionRequestEvent } from "./events.js";
import { textOf } from "./fold.js";
import type { LoopContext } from "./loop-context.js";
import { revealThinking, usageProblem } from "./model-step.js";
import { scanOutput } from "./output.js";
import { costOf, promptTokenBound, worstCaseCost } from "./pricing.js";
import { backoffDelay, classifyError, sleep } from "./retry.js";
import type { RunWriter } from "./run-writer.js";
import { shortMessage } from "./short-message.js";

type Compact = NonNullable<ResolvedContextWindow["compact"]>;

/**
 * Compacts the conversation: asks the summariser for a summary of the turns before the last
 * `keepTurns` assistant turns (the same system, tools and turns, with the instructions added
 * to the last user turn: the cached prefix is read), then records the summary, which replaces
 * those turns (`context-compacted`). Returns `false` after recording why it could not
 * (`context-compaction-failed`); the caller then clears tool results. `pending` re-issues the
 * request a crashed process had recorded, byte for byte.
 */
export async function compactContext(
  loop: LoopContext,
  compact: Compact,
  writer: RunWriter,
  signal: AbortSignal,
  pending?: ContextCompactionRequestEvent,
): Promise<boolean> {
  const fold = writer.fold;
  const step = pending?.step ?? fold.steps + 1;
  const summariser = compact.model;
  const replaced = pending?.replaced ?? compactionCut(fold.messages, compact.keepTurns);
  const fail = (
    reason: ContextCompactionFailedEvent["reason"],
    message: string,
    billed: { usage?: Usage; costUsd?: number } = {},
  ) =>
    writer
      .write({
        type: "context-compaction-failed",
        step,
        model: summariser.model,
        reason,
        message,
        ...billed,
      })
      .then(() => false);
  if (replaced < 1) return fail("nothing_to_compact", "[core] no turn is old enough to summarise");
  const request = compactionRequest(loop, compact, fold.messages, replaced);
  const tokensBefore = pending?.tokensBefore ?? estimatePromptTokens(loop.fixedBytes, fold);
  if (!pending) {
    const bound = promptTokenBound(
      Buffer.byteLength(JSON.stringify({ system: request.system, tools: request.tools })) +
        messagesBytes(request.messages),
      request.messages.length,
    );
    const estimateUsd = worstCaseCost(bound, request.max_tokens, compact.price);
    const { maxUsd, maxTokens } = fold.start.budget;
    if (maxUsd !== undefined && fold.committedUsd + estimateUsd > maxUsd)
      return fail(
        "budget",
        `[core] the run's budget (maxUsd ${maxUsd}) cannot afford a compaction call (worst case $${estimateUsd.toFixed(4)})`,
      );
    const spend = fold.state.spend;
    if (
      maxTokens !== undefined &&
      spend.inputTokens + spend.outputTokens + bound + request.max_tokens > maxTokens
    )
      return fail(
        "budget",
        `[core] the run's budget (maxTokens ${maxTokens}) cannot afford a compaction call (worst case ${bound + request.max_tokens} tokens)`,
      );
    await writer.write({
      type: "context-compaction-request",
      step,
      model: summariser.model,
      replaced,
      maxTokens: request.max_tokens,
      estimateUsd,
      tokensBefore,
      idempotencyKey: `${writer.runId}:compaction:${step}:${fold.nextSeq}`,
    });
  }
  const called = await callSummariser(loop, compact, request, signal, writer, step);
  if ("error" in called) return fail("model_error", called.error);
  const { response, attempts, latencyMs } = called;
  const billed = { usage: response.usage, costUsd: costOf(response.usage, compact.price) };
  if (response.stop_reason === "max_tokens")
    return fail(
      "summary_too_long",
      `[core] the summary was cut at max_tokens (${request.max_tokens}); raise contextWindow.compact.maxTokens`,
      billed,
    );
  const text = textOf(response.content).trim();
  if (text === "") return fail("empty_summary", "[core] the summariser returned no text", billed);
  const rate = tokensPerByte(loop.fixedBytes, fold);
  const oldTurns = fold.messages.slice(1, 1 + replaced);
  const replacedTokens = Math.ceil(messagesBytes(oldTurns) * rate);
  if (response.usage.output_tokens >= replacedTokens)
    return fail(
      "summary_too_long",
      `[core] the summary has ${response.usage.output_tokens} tokens, not fewer than the ${replacedTokens} it would replace`,
      billed,
    );
  const summary = await checkedSummary(loop, writer.runId, text);
  if (summary.scan?.verdict === "injection")
    return fail(
      "flagged_summary",
      `[core] the scanner flagged the summary as an injection (${summary.scan.rules.join(", ")}); it was not used`,
      billed,
    );
  const summaryBytes = messagesBytes([
    { role: "user", content: [{ type: "text", text: summaryTurnText(summary.content) }] },
  ]);
  const afterBytes = loop.fixedBytes + fold.messageBytes - messagesBytes(oldTurns) + summaryBytes;
  await writer.write({
    type: "context-compacted",
    step,
    model: summariser.model,
    replaced,
    summary: summary.content,
    replacedTokens,
    tokensBefore,
    tokensAfter: Math.ceil(afterBytes * rate),
    ...billed,
    latencyMs,
    attempts,
    ...(summary.scan ? { scan: summary.scan } : {}),
  });
  return true;
}

/**
 * The summary as the conversation keeps it: values through the vault, then the redactor, then
 * the scanner and the envelope, as any text about untrusted content.
 */
async function checkedSummary(loop: LoopContext, runId: string, text: string) {
  let summary = loop.vault ? loop.vault.tokenize(text) : text;
  const redact = loop.config.redact;
  if (redact) {
    const redacted = redact(summary);
    summary = typeof redacted === "string" ? redacted : String(redacted);
  }
  return scanOutput(
    summary,
    { source: "context_summary", runId },
    loop.config.scanner,
    loop.config.envelope,
    loop.reportError,
  );
}

/**
 * The compaction request: the agent's system and tools, the turns to summarise, and the
 * instructions as a text block at the end of the last of them (a user turn); no tool calls.
 */
export function compactionRequest(
  loop: LoopContext,
  compact: Compact,
  messages: readonly Message[],
  replaced: number,
): ModelRequest {
  const turns = messages.slice(0, 1 + replaced);
  const last = turns[turns.length - 1]!;
  const content =
    typeof last.content === "string"
      ? [{ type: "text" as const, text: last.content }]
      : [...last.content];
  content.push({ type: "text", text: compact.instructions });
  turns[turns.length - 1] = { role: "user", content };
  return {
    model: compact.model.model,
    max_tokens: compact.maxTokens,
    ...(loop.system ? { system: loop.system } : {}),
    messages: loop.vault ? revealThinking(turns, loop.vault) : turns,
    ...(loop.toolSpecs.length > 0
      ? { tools: loop.toolSpecs as ToolSpec[], tool_choice: { type: "none" as const } }
      : {}),
    // With server-side clearing the turns still hold every result: the summariser's API clears
    // them the same way, when it can (or the call may be over its window).
    ...(loop.serverEdits &&
    compact.model.serverContextEdits?.includes(loop.serverEdits.management.edits[0]!.type)
      ? { context_management: loop.serverEdits.management }
      : {}),
  };
}

/** One summariser call with the agent's retry settings; an error after the last attempt is returned. */
async function callSummariser(
  loop: LoopContext,
  compact: Compact,
  request: ModelRequest,
  signal: AbortSignal,
  writer: RunWriter,
  step: number,
): Promise<{ response: ModelResponse; attempts: number; latencyMs: number } | { error: string }> {
  const model = compact.model;
  for (let attempt = 1; ; attempt += 1) {
    const started = performance.now();
    let error: unknown;
    try {
      const response = await model.create(request, { signal });
      const problem =
        response && Array.isArray(response.content) && response.usage
          ? usageProblem(response.usage as unknown as Record<string, unknown>)
          : "the reply is not a Messages API response";
      if (!problem)
        return { response, attempts: attempt, latencyMs: Math.round(performance.now() - started) };
      error = new Error(problem);
    } catch (caught) {
      error = caught;
    }
    if (signal.aborted) throw signal.reason;
    let classification = classifyError(error);
    try {
      if (model.classifyError) classification = model.classifyError(error);
    } catch (classifyFailure) {
      loop.reportError(classifyFailure, "compact.model.classifyError");
    }
    if (!classification.retryable || attempt >= loop.retry.maxAttempts)
      return {
        error: `[core] the compaction call failed after ${attempt} attempt${attempt === 1 ? "" : "s"} (${classification.kind}): ${shortMessage(error)}`,
      };
    const waitMs = backoffDelay(attempt, classification, loop.retry);
    // Logged like a step's retry (the log shows every attempt the run paid for or waited on).
    await writer.write({
      type: "model-retry",
      step,
      attempt,
      kind: classification.kind,
      ...(classification.status ? { status: classification.status } : {}),
      waitMs,
      message: `compaction: ${shortMessage(error)}`,
    });
    await sleep(waitMs, signal);
  }
}
