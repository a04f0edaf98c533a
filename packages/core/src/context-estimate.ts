import type { Message } from "./contracts/model.js";
import type { RunFold } from "./fold.js";

/**
 * Tokens per UTF-8 byte assumed before the API has reported a count (no reply yet). Claude's
 * tokenizers give about one token per 3.5 to 4 bytes of English and JSON; one per 3 errs on
 * the side of clearing early.
 */
export const defaultTokensPerByte = 1 / 3;

/**
 * Tokens per byte of the last request: the prompt tokens the API reported over the bytes it
 * sent (system and tools included), so the estimate follows the model's tokenizer and content.
 */
export function tokensPerByte(fixedBytes: number, fold: RunFold): number {
  const calibration = fold.calibration;
  if (!calibration || calibration.tokens <= 0) return defaultTokensPerByte;
  return calibration.tokens / (fixedBytes + calibration.bytes);
}

/**
 * The estimated prompt tokens of the next request, with no API call: the tokens the API
 * reported for the last exchange plus the bytes added since at the calibrated rate, or (after
 * a context edit, which invalidates that count) the whole conversation at that rate. O(1).
 */
export function estimatePromptTokens(fixedBytes: number, fold: RunFold): number {
  const rate = tokensPerByte(fixedBytes, fold);
  const known = fold.knownPrefix;
  if (known && known.bytes <= fold.messageBytes)
    return Math.ceil(known.tokens + (fold.messageBytes - known.bytes) * rate);
  return Math.ceil((fixedBytes + fold.messageBytes) * rate);
}

/** UTF-8 bytes of messages as the fold counts them (each message's JSON plus one). */
export function messagesBytes(messages: readonly Message[]): number {
  let bytes = 0;
  for (const message of messages) bytes += Buffer.byteLength(JSON.stringify(message)) + 1;
  return bytes;
}
