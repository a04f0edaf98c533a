import type { StoredEventInput } from "../contracts/event-store.js";

/**
 * The smallest valid log a store accepts: a bare `run-start` then `model-retry` events, the
 * cheapest event to write many of. For the tests and benches of stores (long logs, hash
 * chains, batched reads, file limits); `eventBuilders` gives realistic events instead.
 *
 * @example
 * await store.append("run_1", retryLog("run_1", 1_000), { expectedSeq: 0 });
 */
export function bareStart(
  runId: string,
  options: { task?: string | undefined; at?: number | undefined } = {},
) {
  return {
    type: "run-start",
    runId,
    agentId: "a",
    task: options.task ?? "t",
    model: "m",
    maxTokens: 1,
    budget: {},
    policyDigest: "p",
    toolDigest: "t",
    at: options.at ?? 1,
  } as StoredEventInput;
}

/** A `model-retry` event (step 1) with the given attempt, message and time. */
export function retryEvent(attempt: number, message: string, at: number): StoredEventInput {
  return {
    type: "model-retry",
    step: 1,
    attempt,
    kind: "overloaded",
    waitMs: 1,
    message,
    at,
  } as StoredEventInput;
}

/**
 * `count` events: `bareStart(runId)` then `count - 1` retries, attempt `i` at time `2 + i`
 * with message `message(i)` (default `m${i}`).
 */
export function retryLog(
  runId: string,
  count: number,
  options: { task?: string; message?: (index: number) => string } = {},
): StoredEventInput[] {
  const message = options.message ?? ((index: number) => `m${index}`);
  return [
    bareStart(runId, { task: options.task }),
    ...Array.from({ length: count - 1 }, (_, index) =>
      retryEvent(index, message(index), 2 + index),
    ),
  ];
}
