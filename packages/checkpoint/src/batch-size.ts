import { InvalidArgumentError } from "@loopguard/core";

/** Checks the `batchSize` option of `readBatches` (default 1 000 events). */
export function checkBatchSize(batchSize: unknown, where: string): number {
  if (batchSize === undefined) return 1_000;
  if (!Number.isSafeInteger(batchSize) || (batchSize as number) < 1)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: batchSize must be a positive integer (events per batch), got ${String(batchSize)}`,
    );
  return batchSize as number;
}
