import type { ServerContextEdits } from "./context-server-edits.js";
import type { Model } from "./contracts/model.js";
import { InvalidArgumentError } from "./errors.js";
import { type ModelPrice, priceOf } from "./pricing.js";

/**
 * How the loop keeps a long run's conversation inside the model's context window
 * (`createAgent({ contextWindow })`). Every edit is an event of the run's log, so a resumed run
 * sends exactly what the uninterrupted one would have.
 */
export interface ContextWindowOptions {
  /**
   * The most prompt tokens one request may carry. Default: the model's window
   * (`Model.contextWindow`; `claudeModel` knows Claude's).
   */
  maxInputTokens?: number;
  /**
   * Past `atFraction` of `maxInputTokens`, tool results older than the last `keepLast` are
   * replaced by a stub naming the tool, the call and the result's digest (the model can call
   * the tool again); a result's marks (scan verdict, untrusted, error, vault tokens) stay.
   *
   * `where` (default `"client"`): `"client"` makes the edit in the loop, so the stubs are in
   * the log and in the requests, and a resumed run sends the same bytes. `"server"` asks the
   * API to clear (`context_management` edit `clear_tool_uses_20250919`, trigger
   * `atFraction × maxInputTokens`, keep `keepLast`) when the model supports it
   * (`Model.serverContextEdits`; `claudeModel` does): the requests carry the whole
   * conversation, the API drops old results before the model reads them (placeholders instead
   * of stubs, so no marks or digests), and each clearing it reports is logged as a
   * `context-edited` event with `source: "server"`. A model without that support gets the
   * client edit.
   */
  clearToolResults?: { keepLast: number; atFraction: number; where?: "client" | "server" };
  /**
   * Past `atFraction` of `maxInputTokens`, the model (or `model`) summarises the turns before
   * the last `keepTurns` (default 2) assistant turns; the summary replaces them. System, tools
   * and the first user turn stay as they are, so the cached prefix stays valid.
   */
  compact?: {
    atFraction: number;
    /** What the summary must keep; replaces the built-in instructions. */
    instructions?: string;
    /** A (cheaper) model that writes the summary. Default: the agent's model. */
    model?: Model;
    /** `max_tokens` of the summary call. Default 8 192. */
    maxTokens?: number;
    /** Assistant turns (with their results) kept whole after the summary. Default 2. */
    keepTurns?: number;
  };
}

const clearToolUsesType = "clear_tool_uses_20250919";

/**
 * The `context_management` of every model request when the API clears tool results
 * (`clearToolResults.where: "server"` on a model that supports it); `undefined` otherwise.
 */
export function serverContextEditsOf(
  window: ResolvedContextWindow | undefined,
): ServerContextEdits | undefined {
  const clear = window?.clear;
  if (!window || !clear || clear.where !== "server") return undefined;
  const management: ServerContextEdits["management"] = {
    edits: [
      {
        type: clearToolUsesType,
        trigger: {
          type: "input_tokens",
          value: Math.max(1, Math.floor(clear.atFraction * window.maxInputTokens)),
        },
        keep: { type: "tool_uses", value: clear.keepLast },
      },
    ],
  };
  return { management, maxInputTokens: window.maxInputTokens, keepLast: clear.keepLast };
}

/** Built-in instructions of a compaction call. */
export const defaultCompactionInstructions =
  "Your context window is nearly full, so the turns above will be replaced by your summary. Write that summary now, for yourself: the task, what you have done and found so far (every id, value, decision and open question you still need, exactly), and what is left to do. Tool results you do not restate will be gone; you can call a tool again to see one. Reply with the summary only, no tool calls.";

/** `contextWindow` checked, with its defaults. */
export interface ResolvedContextWindow {
  maxInputTokens: number;
  /** `where`: where the clearing is made for this agent's model (`server` only when it supports it). */
  clear: { keepLast: number; atFraction: number; where: "client" | "server" } | undefined;
  compact:
    | {
        atFraction: number;
        instructions: string;
        model: Model;
        price: ModelPrice;
        maxTokens: number;
        keepTurns: number;
      }
    | undefined;
}

const isFraction = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 && value < 1;
const isCount = (value: unknown, least: number): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= least;

/**
 * Checks `createAgent({ contextWindow })`; throws `InvalidArgumentError` saying what is wrong
 * and what to do. `undefined` when the agent manages no context window.
 */
export function validateContextWindow(
  options: ContextWindowOptions | undefined,
  model: Model,
  prices: Readonly<Record<string, ModelPrice>>,
): ResolvedContextWindow | undefined {
  if (options === undefined) return undefined;
  const fail = (message: string): never => {
    throw new InvalidArgumentError(`[core] createAgent: contextWindow.${message}`);
  };
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[core] createAgent: contextWindow must be an object, e.g. { clearToolResults: { keepLast: 5, atFraction: 0.6 }, compact: { atFraction: 0.8 } }",
    );
  const reported = model.contextWindow;
  const maxInputTokens = options.maxInputTokens ?? reported;
  if (maxInputTokens === undefined)
    fail(
      `maxInputTokens is required: the model ${JSON.stringify(model.model)} does not report its context window; pass contextWindow.maxInputTokens (e.g. 200000), or give the model one (claudeModel({ contextWindow }))`,
    );
  if (!isCount(maxInputTokens, 1024))
    fail(
      `maxInputTokens must be a whole number of tokens of at least 1024, got ${JSON.stringify(maxInputTokens)}`,
    );
  let clear: ResolvedContextWindow["clear"];
  if (options.clearToolResults !== undefined) {
    const { keepLast, atFraction, where = "client" } = options.clearToolResults ?? {};
    if (!isCount(keepLast, 1))
      fail(
        `clearToolResults.keepLast must be a whole number of at least 1 (the most recent tool results kept whole), got ${JSON.stringify(keepLast)}`,
      );
    if (!isFraction(atFraction))
      fail(
        `clearToolResults.atFraction must be a number between 0 and 1 (exclusive), the share of maxInputTokens that starts clearing, got ${JSON.stringify(atFraction)}`,
      );
    if (where !== "client" && where !== "server")
      fail(
        `clearToolResults.where must be "client" (the loop clears; stubs in the log) or "server" (the API clears where the model supports it), got ${JSON.stringify(where)}`,
      );
    const server = where === "server" && model.serverContextEdits?.includes(clearToolUsesType);
    clear = { keepLast: keepLast!, atFraction: atFraction!, where: server ? "server" : "client" };
  }
  return {
    maxInputTokens: maxInputTokens!,
    clear,
    compact: resolveCompact(options.compact, model, prices, fail),
  };
}

function resolveCompact(
  compact: ContextWindowOptions["compact"],
  model: Model,
  prices: Readonly<Record<string, ModelPrice>>,
  fail: (message: string) => never,
): ResolvedContextWindow["compact"] {
  if (compact === undefined) return undefined;
  if (compact === null || typeof compact !== "object")
    fail("compact must be an object, e.g. { atFraction: 0.8 }");
  if (!isFraction(compact.atFraction))
    fail(
      `compact.atFraction must be a number between 0 and 1 (exclusive), the share of maxInputTokens that starts compaction, got ${JSON.stringify(compact.atFraction)}`,
    );
  if (
    compact.instructions !== undefined &&
    (typeof compact.instructions !== "string" || compact.instructions.trim() === "")
  )
    fail("compact.instructions must be a non-empty string");
  const summariser = compact.model ?? model;
  if (typeof summariser?.create !== "function" || typeof summariser.model !== "string")
    fail("compact.model must implement the Model contract (claudeModel({ model: ... }))");
  const maxTokens = compact.maxTokens ?? 8192;
  if (!isCount(maxTokens, 1))
    fail(`compact.maxTokens must be a positive whole number, got ${JSON.stringify(maxTokens)}`);
  const keepTurns = compact.keepTurns ?? 2;
  if (!isCount(keepTurns, 1))
    fail(
      `compact.keepTurns must be a whole number of at least 1, got ${JSON.stringify(keepTurns)}`,
    );
  return {
    atFraction: compact.atFraction,
    instructions: compact.instructions ?? defaultCompactionInstructions,
    model: summariser,
    price: priceOf(summariser.model, prices),
    maxTokens,
    keepTurns,
  };
}
