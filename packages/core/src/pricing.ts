import type { ModelRequest, Usage } from "./contracts/model.js";
import { InvalidArgumentError, UnknownModelPriceError } from "./errors.js";

/** Prices of one model in USD per million tokens. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  /** 5-minute cache writes. */
  cacheWrite5mPerMTok: number;
  /** 1-hour cache writes. */
  cacheWrite1hPerMTok: number;
  cacheReadPerMTok: number;
  /** A higher band for requests whose prompt (input + cache reads + writes) exceeds a threshold. */
  longPrompt?: Omit<ModelPrice, "longPrompt"> & { thresholdTokens: number };
}

/** The date the built-in price table was checked against Anthropic's pricing page. */
export const priceTableDate = "2026-11-30";

/**
 * Built-in prices of current Claude models, checked on {@link priceTableDate}.
 *
 * Sources: Claude docs "Models & pricing" and the model overview pages. Sonnet 5.5's cache
 * read price was cut to $0.10 on 2026-10-07. Haiku 5.5 is billed in two bands by prompt length
 * (above 100 000 prompt tokens every token of the request is billed at the higher band).
 */
export const claudePrices: Readonly<Record<string, ModelPrice>> = Object.freeze({
  "claude-opus-5-5": {
    inputPerMTok: 4,
    outputPerMTok: 20,
    cacheWrite5mPerMTok: 5,
    cacheWrite1hPerMTok: 8,
    cacheReadPerMTok: 0.2,
  },
  "claude-sonnet-5-5": {
    inputPerMTok: 2,
    outputPerMTok: 10,
    cacheWrite5mPerMTok: 2.5,
    cacheWrite1hPerMTok: 4,
    cacheReadPerMTok: 0.1,
  },
  "claude-haiku-5-5": {
    inputPerMTok: 0.1,
    outputPerMTok: 0.5,
    cacheWrite5mPerMTok: 0.125,
    cacheWrite1hPerMTok: 0.2,
    cacheReadPerMTok: 0.01,
    longPrompt: {
      thresholdTokens: 100_000,
      inputPerMTok: 0.5,
      outputPerMTok: 2.5,
      cacheWrite5mPerMTok: 0.625,
      cacheWrite1hPerMTok: 1,
      cacheReadPerMTok: 0.05,
    },
  },
  "claude-opus-5": {
    inputPerMTok: 5,
    outputPerMTok: 25,
    cacheWrite5mPerMTok: 6.25,
    cacheWrite1hPerMTok: 10,
    cacheReadPerMTok: 0.5,
  },
  "claude-sonnet-5": {
    inputPerMTok: 2,
    outputPerMTok: 10,
    cacheWrite5mPerMTok: 2.5,
    cacheWrite1hPerMTok: 4,
    cacheReadPerMTok: 0.2,
  },
});

/** Finds a model's price: the caller's table first, then the built-in one (dated suffixes allowed). */
export function priceOf(
  model: string,
  prices: Readonly<Record<string, ModelPrice>> = {},
): ModelPrice {
  const own = prices[model] ?? claudePrices[model];
  if (own) return own;
  // `claude-sonnet-5-5-20261001` and `claude-sonnet-5-5[1m]` are priced as their family.
  const base = model.replace(/\[[^\]]*\]$/, "").replace(/-\d{8}$/, "");
  const found = prices[base] ?? claudePrices[base];
  if (found) return found;
  throw new UnknownModelPriceError(model, [...Object.keys(prices), ...Object.keys(claudePrices)]);
}

/** Checks a caller-given price table and says which field is wrong. */
export function validatePrices(prices: unknown): Record<string, ModelPrice> {
  if (prices === undefined) return {};
  if (prices === null || typeof prices !== "object") {
    throw new InvalidArgumentError(
      '[core] prices must be an object of model id to price, e.g. { "my-model": { inputPerMTok: 1, outputPerMTok: 5, ... } }',
    );
  }
  const fields = [
    "inputPerMTok",
    "outputPerMTok",
    "cacheWrite5mPerMTok",
    "cacheWrite1hPerMTok",
    "cacheReadPerMTok",
  ] as const;
  for (const [model, price] of Object.entries(prices)) {
    for (const field of fields) {
      const value = (price as Record<string, unknown>)?.[field];
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
        throw new InvalidArgumentError(
          `[core] prices["${model}"].${field} must be a non-negative number of USD per million tokens, got ${JSON.stringify(value)}`,
        );
      }
    }
  }
  return prices as Record<string, ModelPrice>;
}

/** The USD cost of one response's usage. */
export function costOf(usage: Usage, price: ModelPrice): number {
  const write1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const writeTotal = usage.cache_creation_input_tokens ?? 0;
  const write5m = Math.max(0, writeTotal - write1h);
  const read = usage.cache_read_input_tokens ?? 0;
  const prompt = usage.input_tokens + writeTotal + read;
  const band =
    price.longPrompt && prompt > price.longPrompt.thresholdTokens ? price.longPrompt : price;
  return (
    (usage.input_tokens * band.inputPerMTok +
      usage.output_tokens * band.outputPerMTok +
      write5m * band.cacheWrite5mPerMTok +
      write1h * band.cacheWrite1hPerMTok +
      read * band.cacheReadPerMTok) /
    1_000_000
  );
}

/**
 * The worst-case USD cost of a call: every prompt token billed at the dearest input rate (a
 * 1-hour cache write), `maxTokens` of output, in the dearer band when the prompt could cross it.
 */
export function worstCaseCost(promptTokens: number, maxTokens: number, price: ModelPrice): number {
  const band =
    price.longPrompt && promptTokens > price.longPrompt.thresholdTokens ? price.longPrompt : price;
  // Any prompt token may be billed at any of the input rates (a custom price table may make
  // cache reads dearer than plain input), so the bound takes the largest.
  const inputRate = Math.max(
    band.inputPerMTok,
    band.cacheWrite5mPerMTok,
    band.cacheWrite1hPerMTok,
    band.cacheReadPerMTok,
  );
  return (promptTokens * inputRate + maxTokens * band.outputPerMTok) / 1_000_000;
}

/**
 * An upper bound on a request's prompt tokens. Claude's tokenizer never makes more tokens
 * than UTF-8 bytes, so the byte length of the request body (plus a framing allowance per
 * message) bounds it. `knownPrefix` lets the caller use the exact count the API reported for
 * an earlier prompt and bound only the bytes added since.
 */
export function promptTokenBound(
  bytes: number,
  messageCount: number,
  knownPrefix?: { tokens: number; bytes: number },
): number {
  const framing = 64 + messageCount * 8;
  if (knownPrefix && knownPrefix.bytes <= bytes)
    return knownPrefix.tokens + (bytes - knownPrefix.bytes) + framing;
  return bytes + framing;
}

/** The byte length of a request's prompt as {@link promptTokenBound} counts it. */
export function requestBytes(request: ModelRequest): number {
  return Buffer.byteLength(
    JSON.stringify({ system: request.system, tools: request.tools, messages: request.messages }),
    "utf8",
  );
}
