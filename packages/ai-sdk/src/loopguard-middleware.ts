import {
  costOf,
  currentRun,
  type ModelPrice,
  type OutputEnvelope,
  priceOf,
  type Scanner,
  type ScanResult,
} from "@loopguard/core";
import type { RunState } from "@loopguard/core/plugin";
import type { LanguageModelMiddleware } from "ai";
import { BudgetExceededError, GuardToolsError, OutsideRunError } from "./errors.js";

/** Caps on one run's model calls. */
export interface MiddlewareBudget {
  /** Model calls (steps). */
  maxSteps?: number;
  /** Input plus output tokens. */
  maxTokens?: number;
  /** USD, priced from loopguard's Claude price table or `prices`. */
  maxUsd?: number;
}

/** Options of `loopguardMiddleware`. */
export interface LoopguardMiddlewareOptions {
  /** Checked before each model call against what the run has spent; a call past a cap throws. */
  budget?: MiddlewareBudget;
  /** Prices per model id, for models loopguard's table does not know. */
  prices?: Record<string, ModelPrice>;
  /**
   * Scans tool results in the prompt that no guarded tool has scanned (tools outside
   * `guardTools`, results the app added), and records them on the run so the taint gate sees them.
   */
  scanner?: Scanner;
  /** Wraps the text of a scanned tool result before the model sees it (the quarantine envelope). */
  envelope?: OutputEnvelope;
  onError?: (error: unknown, where: string) => void;
}

/** The usage shape of the AI SDK's v3 language models. */
interface UsageV3 {
  inputTokens: {
    total: number | undefined;
    cacheRead?: number | undefined;
    cacheWrite?: number | undefined;
    noCache?: number | undefined;
  };
  outputTokens: { total: number | undefined };
}

/**
 * A language-model middleware (`wrapLanguageModel({ model, middleware })`) that feeds each
 * call's usage into the current run's spend (steps, tokens, USD), refuses a call once the
 * run's budget is spent, and scans tool results the guarded tools did not see.
 *
 * It needs a run: call `generateText`/`streamText` inside `withRun`. Outside any run the first
 * model call throws `OutsideRunError` naming `withRun` (a middleware sees model calls, not
 * `generateText` calls, so it cannot tell where one call's steps end and the next call's
 * begin; a budget kept across an unknown span would be a guess).
 *
 * @example
 * const model = wrapLanguageModel({ model: anthropic("claude-sonnet-5-5"), middleware: loopguardMiddleware({ budget: { maxUsd: 0.5 } }) });
 */
export function loopguardMiddleware(
  options: LoopguardMiddlewareOptions = {},
): LanguageModelMiddleware {
  if (options === null || typeof options !== "object")
    throw new GuardToolsError("[ai-sdk] loopguardMiddleware(options): options must be an object");
  for (const key of ["maxSteps", "maxTokens", "maxUsd"] as const) {
    const value = options.budget?.[key];
    if (value !== undefined && (!Number.isFinite(value) || value < 0))
      throw new GuardToolsError(
        `[ai-sdk] loopguardMiddleware: budget.${key} must be a non-negative number, got ${String(value)}`,
      );
  }
  const onError = (error: unknown, where: string) => {
    try {
      options.onError?.(error, where);
    } catch {
      // nowhere left to report
    }
  };

  const charge = (run: RunState | undefined, modelId: string, usage: UsageV3 | undefined) => {
    if (!run || !usage) return;
    const input = usage.inputTokens.total ?? 0;
    const output = usage.outputTokens.total ?? 0;
    run.spend.steps += 1;
    run.spend.inputTokens += input;
    run.spend.outputTokens += output;
    const price = priceFor(modelId, options, options.budget?.maxUsd !== undefined);
    if (price) {
      const cacheRead = usage.inputTokens.cacheRead ?? 0;
      const cacheWrite = usage.inputTokens.cacheWrite ?? 0;
      run.spend.usd += costOf(
        {
          input_tokens: Math.max(0, input - cacheRead - cacheWrite),
          output_tokens: output,
          cache_read_input_tokens: cacheRead,
          cache_creation_input_tokens: cacheWrite,
        },
        price,
      );
    }
  };

  return {
    specificationVersion: "v3",
    transformParams: async ({ params, model }) => {
      const run = currentRun();
      if (!run) throw outsideRun(model.modelId);
      checkBudget(run, options.budget);
      if (!options.scanner) return params;
      const seen = new Set(run.outputs.map((output) => output.toolUseId));
      const prompt = await Promise.all(
        params.prompt.map(async (message) => {
          if (message.role !== "tool") return message;
          const content = await Promise.all(
            message.content.map(async (part) => {
              if (part.type !== "tool-result" || seen.has(part.toolCallId)) return part;
              const text = outputText(part.output);
              if (text === undefined) return part;
              const provenance = {
                source: "tool_output" as const,
                tool: part.toolName,
                toolUseId: part.toolCallId,
                runId: run.runId,
              };
              let scan: ScanResult;
              try {
                scan = await options.scanner!.scan(text, provenance);
              } catch (error) {
                onError(error, `scanner ${options.scanner!.name}`);
                scan = {
                  verdict: "suspicious",
                  score: 0.5,
                  findings: [{ rule: "scanner_error", start: 0, end: 0 }],
                };
              }
              const shown = options.envelope ? options.envelope(text, provenance, scan) : text;
              seen.add(part.toolCallId);
              run.outputs.push({
                tool: part.toolName,
                toolUseId: part.toolCallId,
                text: shown,
                scan: {
                  verdict: scan.verdict,
                  score: scan.score,
                  rules: [...new Set(scan.findings.map((finding) => finding.rule))],
                },
              });
              return shown === text
                ? part
                : { ...part, output: { type: "text" as const, value: shown } };
            }),
          );
          return { ...message, content };
        }),
      );
      return { ...params, prompt };
    },
    wrapGenerate: async ({ doGenerate, model }) => {
      const run = currentRun();
      const result = await doGenerate();
      charge(run, model.modelId, result.usage as UsageV3);
      return result;
    },
    wrapStream: async ({ doStream, model }) => {
      const run = currentRun();
      const result = await doStream();
      const stream = result.stream.pipeThrough(
        new TransformStream({
          transform(chunk, controller) {
            if (chunk.type === "finish") charge(run, model.modelId, chunk.usage as UsageV3);
            controller.enqueue(chunk);
          },
        }),
      );
      return { ...result, stream };
    },
  };
}

function outsideRun(modelId: string): OutsideRunError {
  return new OutsideRunError(
    `[ai-sdk] loopguardMiddleware: model "${modelId}" was called outside any run, so no budget, spend or scan can be kept; call generateText/streamText inside withRun({ agentId }, async (run) => ...) from @loopguard/core (one withRun per conversation turn)`,
  );
}

function checkBudget(run: RunState, budget: MiddlewareBudget | undefined): void {
  if (!budget) return;
  const spend = run.spend;
  if (budget.maxSteps !== undefined && spend.steps >= budget.maxSteps)
    throw new BudgetExceededError(
      `[ai-sdk] run ${run.runId} has made ${spend.steps} model calls, its budget's maxSteps (${budget.maxSteps}); stop the loop (stopWhen) or raise the budget`,
      "maxSteps",
    );
  const tokens = spend.inputTokens + spend.outputTokens;
  if (budget.maxTokens !== undefined && tokens >= budget.maxTokens)
    throw new BudgetExceededError(
      `[ai-sdk] run ${run.runId} has used ${tokens} tokens, its budget's maxTokens (${budget.maxTokens}); stop the loop or raise the budget`,
      "maxTokens",
    );
  if (budget.maxUsd !== undefined && spend.usd >= budget.maxUsd)
    throw new BudgetExceededError(
      `[ai-sdk] run ${run.runId} has spent $${spend.usd.toFixed(4)}, its budget's maxUsd ($${budget.maxUsd}); stop the loop or raise the budget`,
      "maxUsd",
    );
}

function priceFor(
  modelId: string,
  options: LoopguardMiddlewareOptions,
  required: boolean,
): ModelPrice | undefined {
  try {
    return priceOf(modelId, options.prices ?? {});
  } catch (error) {
    if (required)
      throw new GuardToolsError(
        `[ai-sdk] loopguardMiddleware: no price for model "${modelId}", so budget.maxUsd cannot be kept; pass prices: { "${modelId}": { inputPerMTok, outputPerMTok, cacheWrite5mPerMTok, cacheWrite1hPerMTok, cacheReadPerMTok } }`,
        { cause: error },
      );
    return undefined;
  }
}

/** The text of a tool result output, or undefined for content the scanner cannot read. */
function outputText(output: { type: string; value?: unknown }): string | undefined {
  if (output.type === "text" || output.type === "error-text") return String(output.value);
  if (output.type === "json" || output.type === "error-json") return JSON.stringify(output.value);
  if (output.type === "content" && Array.isArray(output.value))
    return (output.value as { type: string; text?: string }[])
      .filter((item) => item.type === "text")
      .map((item) => item.text ?? "")
      .join("\n");
  return undefined;
}
