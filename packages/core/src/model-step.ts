import { type AgentStreamSink, toolCallEvent } from "./agent-stream.js";
import { treeLeft } from "./budget-tree.js";
import { recordServerEdits, type ServerContextEdits } from "./context-server-edits.js";
import type {
  ContentBlock,
  ErrorClassification,
  Message,
  Model,
  ModelRequest,
  ModelResponse,
  ToolSpec,
  Usage,
} from "./contracts/model.js";
import type { Vault } from "./contracts/vault.js";
import { LoopguardError, ModelCallError } from "./errors.js";
import type { RunFold } from "./fold.js";
import { costOf, type ModelPrice, promptTokenBound, worstCaseCost } from "./pricing.js";
import { backoffDelay, classifyError, type ResolvedRetryOptions, sleep } from "./retry.js";
import { type RunBudgetHooks, RunBudgetStop } from "./run-budgets.js";
import type { RunWriter } from "./run-writer.js";
import { shortMessage } from "./short-message.js";
import { StopRun } from "./stop-run.js";
import {
  type AssemblerUpdate,
  StreamProtocolError,
  type StreamSkip,
} from "./stream/assemble-message.js";
import { createDeltaFilter, type DeltaFilter, type TextTransform } from "./stream/delta-filter.js";
import { streamAttempt } from "./stream/stream-attempt.js";

/** What the model step needs of the agent. */
export interface ModelStepContext {
  model: Model;
  price: ModelPrice;
  system: string | undefined;
  toolSpecs: readonly ToolSpec[];
  /** UTF-8 bytes of the system prompt and tool definitions (the fixed part of every request). */
  fixedBytes: number;
  retry: ResolvedRetryOptions;
  now: () => number;
  reportError: (error: unknown, where: string) => void;
  /** How model calls stream and what streamed text passes through before the host sees it. */
  streaming: StreamingSettings;
  /** The agent's run budgets (`createAgent({ budgets })`); absent without any. */
  runBudgets?: RunBudgetHooks | undefined;
  /** The agent's vault: the model's text, tool-use inputs and thinking reach the log through it. */
  vault: Vault | undefined;
  /** Set when the API clears tool results (`clearToolResults.where: "server"`). */
  serverEdits?: ServerContextEdits | undefined;
}

/** Streaming settings of an agent. */
export interface StreamingSettings {
  /** Abort and retry a stream idle this long. */
  idleTimeoutMs: number;
  /** Characters held back per block before the transforms (see `createDeltaFilter`). */
  streamHoldBack: number;
  /** Applied to streamed text in order: the vault's `tokenize`, then the redactor. */
  transforms: readonly TextTransform[];
  redactStream: (() => TransformStream<string, string>) | undefined;
  /** The agent's redactor, for tool-call inputs shown to the host. */
  redact: ((value: unknown) => unknown) | undefined;
}

/**
 * One model call of the loop: checks the step, token and USD budgets against the worst case
 * (shrinking `max_tokens` where that keeps the call under), records the request, calls the
 * model with retries, records the response, and ends the run when the response ends it.
 * Throws `StopRun` when a budget or the wall clock stops the run.
 */
export async function modelStep(
  context: ModelStepContext,
  writer: RunWriter,
  signal: AbortSignal,
  sink?: AgentStreamSink,
): Promise<void> {
  const fold = writer.fold;
  const step = fold.steps + 1;
  const affordable = affordableMaxTokens(context, fold);
  const { maxTokens, promptBound } = context.runBudgets
    ? await context.runBudgets.beforeStep(writer, step, affordable, context.price)
    : affordable;
  const estimateUsd = worstCaseCost(promptBound, maxTokens, context.price);
  // Built field by field (no spread copies per step), in the order the API documents them.
  const request = { model: context.model.model, max_tokens: maxTokens } as ModelRequest;
  if (context.system) request.system = context.system;
  request.messages =
    context.vault && fold.hasThinking
      ? revealThinking(fold.messages, context.vault)
      : fold.messages;
  if (context.toolSpecs.length > 0) {
    request.tools = context.toolSpecs as ToolSpec[];
    request.tool_choice = { type: "auto" };
  }
  if (context.serverEdits) request.context_management = context.serverEdits.management;
  await writer.write({
    type: "model-request",
    step,
    maxTokens,
    estimateUsd,
    requestDigest: `${fold.chainDigest}:${maxTokens}`,
  });
  const { response, attempts, latencyMs, streamed, firstChunkMs, skipped } = await callWithRetries(
    context,
    writer,
    request,
    { step, estimateUsd, estimateTokens: promptBound + maxTokens },
    signal,
    sink,
  );
  await writer.write({
    type: "model-response",
    step,
    response: context.vault ? tokenizedResponse(response, context.vault) : response,
    costUsd: costOf(response.usage, context.price),
    latencyMs,
    attempts,
    streamed,
    ...(firstChunkMs !== undefined ? { firstChunkMs: Math.round(firstChunkMs * 100) / 100 } : {}),
    ...(skipped.length > 0 ? { skipped: [...skipped] } : {}),
  });
  if (context.serverEdits) await recordServerEdits(writer, step, response, context.serverEdits);
  await context.runBudgets?.afterStep(writer, step);
  await endIfFinal(writer);
}

/**
 * The response as the log keeps it: the model's text, its tool-use inputs (every string, at any
 * depth) and its thinking through the vault, like the task and tool outputs, so erasing the
 * vault's values erases them from the run too. Signatures and redacted thinking stay as they
 * came; a thinking block's text is revealed again before it goes back to the API
 * ({@link revealThinking}), so its signature still holds, live and on resume. A vault whose
 * `reveal` does not give a thinking block's exact text back leaves that block as it came.
 */
export function tokenizedResponse(response: ModelResponse, vault: Vault): ModelResponse {
  const content = response.content.map((block): ContentBlock => {
    if (block.type === "text") return { ...block, text: vault.tokenize(block.text) };
    if (block.type === "thinking") {
      // Only when the vault gives the exact text back: the API checks the signature over it,
      // and a resumed run can send back only what `reveal` restores.
      const thinking = vault.tokenize(block.thinking);
      return thinking !== block.thinking && vault.reveal(thinking) === block.thinking
        ? { ...block, thinking }
        : block;
    }
    if (block.type === "tool_use") return { ...block, input: tokenizeDeep(block.input, vault) };
    return block;
  });
  return { ...response, content };
}

function tokenizeDeep(value: unknown, vault: Vault): unknown {
  if (typeof value === "string") return vault.tokenize(value);
  if (Array.isArray(value)) return value.map((item) => tokenizeDeep(item, vault));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, tokenizeDeep(item, vault)]),
    );
  return value;
}

/**
 * Messages as the API must get them back: thinking blocks byte for byte as the model wrote
 * them (the log keeps them tokenised; the vault's `reveal` restores them). Other blocks go as
 * the log holds them. Allocates only when a thinking block holds a token.
 */
export function revealThinking(messages: readonly Message[], vault: Vault): Message[] {
  let copy: Message[] | undefined;
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    if (!message.content.some((block) => block.type === "thinking")) continue;
    let changed = false;
    const content = message.content.map((block) => {
      if (block.type !== "thinking") return block;
      const thinking = vault.reveal(block.thinking);
      if (thinking === block.thinking) return block;
      changed = true;
      return { ...block, thinking };
    });
    if (!changed) continue;
    copy ??= [...messages];
    copy[index] = { ...message, content };
  }
  return copy ?? (messages as Message[]);
}

/**
 * The `max_tokens` the run can afford for the next call, with the bound on its prompt tokens;
 * throws `StopRun` when it can afford none.
 */
function affordableMaxTokens(
  context: ModelStepContext,
  fold: RunFold,
): { maxTokens: number; promptBound: number } {
  const budget = fold.start.budget;
  const price = context.price;
  // One budget for a tree: an ended child's steps (and its descendants') count too.
  if (budget.maxSteps !== undefined && fold.treeSteps >= budget.maxSteps)
    throw new StopRun("budget", "maxSteps");
  let maxTokens = fold.start.maxTokens;
  const promptBound = promptTokenBound(
    context.fixedBytes + fold.messageBytes,
    fold.messages.length,
    fold.knownPrefix && {
      tokens: fold.knownPrefix.tokens,
      bytes: context.fixedBytes + fold.knownPrefix.bytes,
    },
  );
  if (budget.maxTokens !== undefined) {
    const left =
      budget.maxTokens - fold.state.spend.inputTokens - fold.state.spend.outputTokens - promptBound;
    if (left < 1) throw new StopRun("budget", "maxTokens");
    maxTokens = Math.min(maxTokens, left);
  }
  if (budget.maxUsd !== undefined) {
    const left = budget.maxUsd - fold.committedUsd - worstCaseCost(promptBound, 0, price);
    const band =
      price.longPrompt && promptBound > price.longPrompt.thresholdTokens ? price.longPrompt : price;
    const affordable = Math.floor((left * 1_000_000) / band.outputPerMTok);
    if (affordable < 1) throw new StopRun("budget", "maxUsd");
    maxTokens = Math.min(maxTokens, affordable);
  }
  return { maxTokens, promptBound };
}

/**
 * Calls the model until it answers, retrying what is retryable; records retries and the final
 * error. The call streams when the model can (`streamAttempt`): text and thinking go to the
 * host's sink as they arrive, through the vault and redaction; a tool call goes out only once
 * its block is complete. An attempt that fails after the host saw content sends `stream-reset`,
 * and the whole step is retried. The usage a failed attempt reported is recorded and counted.
 */
async function callWithRetries(
  context: ModelStepContext,
  writer: RunWriter,
  request: ModelRequest,
  reserved: { step: number; estimateUsd: number; estimateTokens: number },
  signal: AbortSignal,
  sink: AgentStreamSink | undefined,
): Promise<{
  response: ModelResponse;
  attempts: number;
  latencyMs: number;
  streamed: boolean;
  firstChunkMs: number | undefined;
  skipped: readonly StreamSkip[];
}> {
  const fold = writer.fold;
  const { step } = reserved;
  const budget = fold.start.budget;
  const settings = context.streaming;
  let attempt = 0;
  for (;;) {
    attempt += 1;
    const started = performance.now();
    const shown = sink ? hostView(context, writer.runId, step, sink) : undefined;
    const outcome = await streamAttempt(context.model, request, {
      signal,
      idleTimeoutMs: settings.idleTimeoutMs,
      order: writer.order,
      ...(shown ? { onUpdate: shown.update } : {}),
    });
    let error: unknown;
    if (outcome.ok) {
      try {
        validateResponse(outcome.response);
        return {
          response: outcome.response,
          attempts: attempt,
          latencyMs: Math.round(performance.now() - started),
          streamed: outcome.streamed,
          firstChunkMs: outcome.firstChunkMs,
          skipped: outcome.skipped,
        };
      } catch (invalid) {
        error = invalid;
      }
    } else error = outcome.error;
    if (signal.aborted) throw signal.reason;
    const usage = outcome.ok ? undefined : outcome.usage;
    const billed = usage ? usageFields(usage, context) : {};
    const reset = Boolean(shown?.sawContent);
    if (reset)
      sink!.push({
        type: "stream-reset",
        runId: writer.runId,
        step,
        attempt,
        reason: shortMessage(error),
      });
    const classification = classify(context, error);
    if (!classification.retryable || attempt >= context.retry.maxAttempts) {
      const message = describeModelError(error, classification, attempt);
      await writer.write({
        type: "model-error",
        step,
        kind: classification.kind,
        ...(classification.status ? { status: classification.status } : {}),
        message,
        attempts: attempt,
        ...billed,
      });
      throw new ModelCallError(classification.kind, classification.status, attempt, message, {
        cause: error,
      });
    }
    const waitMs = backoffDelay(attempt, classification, context.retry);
    if (
      budget.wallClockMs !== undefined &&
      fold.activeMs(context.now()) + waitMs > budget.wallClockMs
    ) {
      throw new StopRun("wall_clock", "wallClockMs");
    }
    checkRetryAffordable(fold, reserved, billed);
    await writer.write({
      type: "model-retry",
      step,
      attempt,
      kind: classification.kind,
      ...(classification.status ? { status: classification.status } : {}),
      waitMs,
      message: shortMessage(error),
      ...billed,
      ...(reset ? { reset: true } : {}),
    });
    await sleep(waitMs, signal);
  }
}

/**
 * Throws `StopRun` when the run, or its tree, cannot afford another attempt of the step: the
 * step's worst case was reserved once, for one attempt, and what a failed attempt billed is
 * spent on top of it (a stream cut after its usage was reported, say), so the next attempt
 * must still fit with that spent. The reserved worst case bounds the next attempt (same
 * request), so it fits when the run's committed spend (which holds the step's estimate while it
 * is in flight) plus the failed attempt's cost stays under each cap.
 */
function checkRetryAffordable(
  fold: RunFold,
  reserved: { estimateUsd: number; estimateTokens: number },
  billed: { usage?: Usage; costUsd?: number },
): void {
  const budget = fold.start.budget;
  const costUsd = billed.costUsd ?? 0;
  const tokens = billed.usage ? usageTokens(billed.usage) : 0;
  if (budget.maxUsd !== undefined && fold.committedUsd + costUsd > budget.maxUsd)
    throw new StopRun("budget", "maxUsd");
  if (budget.maxTokens !== undefined) {
    const spent = fold.state.spend.inputTokens + fold.state.spend.outputTokens;
    if (spent + tokens + reserved.estimateTokens > budget.maxTokens)
      throw new StopRun("budget", "maxTokens");
  }
  // In a tree: every ancestor holds the step's worst case (and sees the in-flight estimate in
  // the run's committed spend, so the estimate is added back once).
  const left = treeLeft(fold);
  if (!left) return;
  if (left.usd + reserved.estimateUsd - costUsd < 0 || left.tokens - tokens < 0)
    throw new RunBudgetStop(
      "parent_budget",
      `[core] the parent run's budget cannot cover another attempt of this child run's step (a failed attempt billed $${costUsd.toFixed(4)} and ${tokens} tokens beyond the step's reserved worst case)`,
    );
}

/** Every token a usage block counts (input with cache reads and writes, and output). */
function usageTokens(usage: Usage): number {
  return (
    usage.input_tokens +
    (usage.cache_creation_input_tokens ?? 0) +
    (usage.cache_read_input_tokens ?? 0) +
    usage.output_tokens
  );
}

function usageFields(usage: Usage, context: ModelStepContext): { usage: Usage; costUsd: number } {
  // A failed attempt's reported usage that cannot be counted is not spend (and never lowers it).
  if (usageProblem(usage as unknown as Record<string, unknown>))
    return { usage: { input_tokens: 0, output_tokens: 0 }, costUsd: 0 };
  const clean: Usage = {
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    ...(usage.cache_creation_input_tokens != null
      ? { cache_creation_input_tokens: usage.cache_creation_input_tokens }
      : {}),
    ...(usage.cache_read_input_tokens != null
      ? { cache_read_input_tokens: usage.cache_read_input_tokens }
      : {}),
    ...(usage.cache_creation ? { cache_creation: usage.cache_creation } : {}),
  };
  return { usage: clean, costUsd: costOf(clean, context.price) };
}

/**
 * What the host sees of one attempt: text and (opted-in) thinking through one delta filter per
 * block, flushed when the block completes; tool calls when complete.
 */
function hostView(context: ModelStepContext, runId: string, step: number, sink: AgentStreamSink) {
  const settings = context.streaming;
  const filters = new Map<number, DeltaFilter>();
  const filterFor = (index: number) => {
    let filter = filters.get(index);
    if (!filter) {
      filter = createDeltaFilter({
        transforms: settings.transforms,
        redactStream: settings.redactStream,
        streamHoldBack: settings.streamHoldBack,
      });
      filters.set(index, filter);
    }
    return filter;
  };
  const view = {
    sawContent: false,
    kinds: new Map<number, "text" | "thinking">(),
    async update(update: AssemblerUpdate): Promise<void> {
      if (update.type === "text" || (update.type === "thinking" && sink.thinking)) {
        view.kinds.set(update.index, update.type);
        const out = await filterFor(update.index).push(
          update.type === "text" ? update.text : update.thinking,
        );
        emit(update.index, update.type, out);
        return;
      }
      if (update.type !== "block") return;
      const filter = filters.get(update.index);
      if (filter) {
        emit(update.index, view.kinds.get(update.index)!, await filter.flush());
        filters.delete(update.index);
      }
      const call = toolCallEvent(runId, step, update.block, settings.redact);
      if (call) {
        view.sawContent = true;
        sink.push(call);
      }
    },
  };
  const emit = (index: number, kind: "text" | "thinking", text: string) => {
    if (text === "") return;
    view.sawContent = true;
    sink.push(
      kind === "text"
        ? { type: "text-delta", runId, step, index, text }
        : { type: "thinking-delta", runId, step, index, thinking: text },
    );
  };
  return view;
}

/** Ends the run when the last response's stop reason ends it (also after a crash right before run-end). */
export async function endIfFinal(writer: RunWriter): Promise<void> {
  const fold = writer.fold;
  const answer = fold.lastAssistantText;
  switch (fold.lastStopReason) {
    case undefined:
    case "tool_use":
    case "pause_turn":
      return;
    case "end_turn":
    case "stop_sequence":
      await writer.write({
        type: "run-end",
        status: "completed",
        answer,
        why: fold.lastStopReason,
      });
      return;
    case "max_tokens":
    case "model_context_window_exceeded":
      await writer.write({ type: "run-end", status: "stopped", answer, why: "max_tokens" });
      return;
    case "refusal":
      await writer.write({ type: "run-end", status: "stopped", answer, why: "refusal" });
      return;
    default:
      await writer.write({
        type: "run-end",
        status: "failed",
        answer,
        why: "error",
        error: `[core] the model stopped with an unknown stop_reason ${JSON.stringify(fold.lastStopReason)}`,
      });
  }
}

function classify(context: ModelStepContext, error: unknown): ErrorClassification {
  // A broken stream protocol says itself whether a retry can help, whatever the model.
  if (StreamProtocolError.isInstance(error)) return error.classification();
  if (context.model.classifyError) {
    try {
      return context.model.classifyError(error);
    } catch (classifyFailure) {
      context.reportError(classifyFailure, "model.classifyError");
    }
  }
  return classifyError(error);
}

function describeModelError(
  error: unknown,
  classification: ErrorClassification,
  attempts: number,
): string {
  const what: Record<string, string> = {
    bad_request:
      "the request was rejected as invalid (400); check the model id, tools and messages",
    authentication: "the API key was rejected (401); set a valid ANTHROPIC_API_KEY",
    permission: "the API key may not use this model or feature (403)",
    not_found: "the model or endpoint was not found (404); check the model id",
    request_too_large: "the request is too large (413); shorten the conversation or tool outputs",
    malformed_response: "the model's reply was malformed",
  };
  const base =
    what[classification.kind] ??
    `the model call failed (${classification.kind}${classification.status ? ` ${classification.status}` : ""})`;
  return `[core] ${base} after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${shortMessage(error)}`;
}

/** A reply that is not a Messages API response (classified `malformed_response`, retried). */
class MalformedResponseError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.MalformedResponseError";
  readonly status = undefined;
  constructor(message: string) {
    super("malformed_response", `[core] malformed model response: ${message}`);
  }
}

function validateResponse(response: unknown): asserts response is ModelResponse {
  if (!response || typeof response !== "object")
    throw new MalformedResponseError("expected an object");
  const record = response as Record<string, unknown>;
  if (!Array.isArray(record.content))
    throw new MalformedResponseError("content must be an array of blocks");
  const toolUseIds = new Set<string>();
  for (const [index, block] of (record.content as unknown[]).entries()) {
    if (
      !block ||
      typeof block !== "object" ||
      typeof (block as { type?: unknown }).type !== "string"
    ) {
      throw new MalformedResponseError(`content[${index}] has no type`);
    }
    const typed = block as Record<string, unknown>;
    if (
      typed.type === "tool_use" &&
      (typeof typed.id !== "string" || typeof typed.name !== "string")
    ) {
      throw new MalformedResponseError(`content[${index}] is a tool_use without an id or name`);
    }
    // Intents, decisions and results are keyed by the call's id: a second call with the same
    // id would run under the first one's decision (the Messages API never sends one).
    if (typed.type === "tool_use") {
      if (toolUseIds.has(typed.id as string))
        throw new MalformedResponseError(
          `content[${index}] is a tool_use with id ${JSON.stringify(typed.id)}, which an earlier tool_use of the same reply has: every call needs its own id`,
        );
      toolUseIds.add(typed.id as string);
    }
  }
  const usage = record.usage as Record<string, unknown> | undefined;
  if (!usage || typeof usage !== "object")
    throw new MalformedResponseError("usage must be an object with input_tokens and output_tokens");
  const problem = usageProblem(usage);
  if (problem) throw new MalformedResponseError(problem);
}

/**
 * Why a usage block cannot be counted as spend, or `undefined` when it can. A negative,
 * fractional, non-finite or missing count would lower the run's spend (a budget switched off
 * by a broken model, adapter or proxy), so it is a malformed response, never spend.
 */
export function usageProblem(usage: Record<string, unknown>): string | undefined {
  const count = (value: unknown, name: string, required: boolean): string | undefined => {
    if (value === undefined || value === null)
      return required
        ? `usage.${name} is missing: a response must report its token counts`
        : undefined;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
      return `usage.${name} must be a non-negative whole number of tokens, got ${typeof value === "number" ? String(value) : JSON.stringify(value)}`;
    return undefined;
  };
  const creation = usage.cache_creation as Record<string, unknown> | undefined | null;
  return (
    count(usage.input_tokens, "input_tokens", true) ??
    count(usage.output_tokens, "output_tokens", true) ??
    count(usage.cache_creation_input_tokens, "cache_creation_input_tokens", false) ??
    count(usage.cache_read_input_tokens, "cache_read_input_tokens", false) ??
    (creation !== undefined && creation !== null && typeof creation === "object"
      ? (count(
          creation.ephemeral_5m_input_tokens,
          "cache_creation.ephemeral_5m_input_tokens",
          false,
        ) ??
        count(
          creation.ephemeral_1h_input_tokens,
          "cache_creation.ephemeral_1h_input_tokens",
          false,
        ))
      : undefined)
  );
}
