import type {
  BatchResult,
  LimitOperation,
  LimitOperationResult,
  LimitStore,
} from "./contracts/limit-store.js";
import { InvalidArgumentError } from "./errors.js";
import { limitSpecs } from "./limit-specs.js";

/**
 * Checks the operations of a `batch` (every store makes the same checks, naming the operation
 * at fault), so a bad one is refused before anything is applied.
 */
export function checkLimitOperations(
  operations: readonly LimitOperation[],
  prefix: string,
): readonly LimitOperation[] {
  if (!Array.isArray(operations) || operations.length === 0)
    throw new InvalidArgumentError(
      `${prefix} batch: operations must be a non-empty array of { type: "take" | "reserve" | "settle", key, ... }`,
    );
  operations.forEach((operation, index) => {
    const at = `${prefix} batch: operations[${index}]`;
    if (!operation || typeof operation !== "object")
      throw new InvalidArgumentError(`${at} must be an object`);
    if (typeof operation.key !== "string" || operation.key === "")
      throw new InvalidArgumentError(`${at}: key must be a non-empty string`);
    switch (operation.type) {
      case "take":
        limitSpecs.bucket(operation.bucket, at);
        limitSpecs.count(operation.count, at);
        return;
      case "reserve":
        limitSpecs.counter(operation.counter, at);
        if (!Number.isFinite(operation.amount) || operation.amount < 0)
          throw new InvalidArgumentError(
            `${at}: amount must be a finite number >= 0, got ${String(operation.amount)}`,
          );
        if (typeof operation.id !== "string" || operation.id === "")
          throw new InvalidArgumentError(`${at}: id must be a non-empty string`);
        return;
      case "settle":
        if (!Number.isFinite(operation.actual) || operation.actual < 0)
          throw new InvalidArgumentError(
            `${at}: actual must be a finite number >= 0, got ${String(operation.actual)}`,
          );
        if (typeof operation.id !== "string" || operation.id === "")
          throw new InvalidArgumentError(`${at}: id must be a non-empty string`);
        return;
      default:
        throw new InvalidArgumentError(
          `${at}: type must be "take", "reserve" or "settle", got ${JSON.stringify((operation as { type?: unknown }).type)}`,
        );
    }
  });
  return operations;
}

/**
 * Runs operations on a limit store in one round trip when it has `batch`; otherwise one call
 * each, in order, with the same outcome except atomicity: settles first-come, and takes and
 * reserves that were applied before a refusal are given back (refunds, and settles at 0).
 *
 * @example
 * const { ok } = await limitBatch(store, [
 *   { type: "settle", key: "tenant:acme:usd", id: "run_1:1", actual: 0.012 },
 *   { type: "reserve", key: "tenant:acme:usd", counter: day, amount: 0.05, id: "run_1:2" },
 * ], { now: Date.now() });
 */
export async function limitBatch(
  store: LimitStore,
  operations: readonly LimitOperation[],
  options: { now: number },
): Promise<BatchResult> {
  if (store.batch) return store.batch(operations, options);
  checkLimitOperations(operations, "[core] limitBatch");
  const now = options.now;
  const results: LimitOperationResult[] = [];
  const applied: LimitOperation[] = [];
  let ok = true;
  for (const operation of operations) {
    if (operation.type === "settle") {
      await store.settle(operation.key, operation.id, operation.actual, { now });
      results.push({ type: "settle", ok: true });
      continue;
    }
    if (!ok) {
      // Already refused: what follows is not applied (reported as refused).
      results.push(
        operation.type === "take"
          ? { type: "take", ok: false, remaining: 0, retryAfterMs: 0 }
          : { type: "reserve", ok: false, used: 0 },
      );
      continue;
    }
    const result =
      operation.type === "take"
        ? ({
            type: "take",
            ...(await store.take(operation.key, operation.bucket, {
              now,
              ...(operation.count !== undefined ? { count: operation.count } : {}),
            })),
          } as const)
        : ({
            type: "reserve",
            ...(await store.reserve(operation.key, operation.counter, operation.amount, {
              id: operation.id,
              now,
            })),
          } as const);
    results.push(result);
    if (result.ok) applied.push(operation);
    else ok = false;
  }
  if (!ok) {
    for (const operation of applied.reverse()) {
      if (operation.type === "take")
        await store.refund(operation.key, operation.bucket, {
          now,
          ...(operation.count !== undefined ? { count: operation.count } : {}),
        });
      else if (operation.type === "reserve")
        await store.settle(operation.key, operation.id, 0, { now });
    }
  }
  return { ok, results };
}
