import { InvalidArgumentError } from "@loopguard/core";

/**
 * The run ids the stores accept: the agent's own rule (1 to 128 letters, digits, `_`, `.`,
 * `:` or `-`), minus `.` and `..`. No separator can appear, so a run id can never name a
 * path outside the store's directory.
 */
const runIdPattern = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Whether `runId` is a run id the stores accept. */
export function isValidRunId(runId: unknown): runId is string {
  return typeof runId === "string" && runIdPattern.test(runId) && runId !== "." && runId !== "..";
}

/** Throws `InvalidArgumentError` unless `runId` is a run id the stores accept. */
export function assertRunId(runId: unknown, where: string): asserts runId is string {
  if (!isValidRunId(runId)) {
    const shown =
      typeof runId === "string"
        ? JSON.stringify(runId.length > 60 ? `${runId.slice(0, 57)}...` : runId)
        : String(runId);
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: run id ${shown} is invalid: use 1 to 128 letters, digits, "_", ".", ":" or "-" (the run ids createAgent makes)`,
    );
  }
}
