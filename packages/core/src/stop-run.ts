import type { RunResult } from "./run-result.js";

/**
 * Thrown inside the loop to end the run as `stopped` (a budget limit, the wall clock, a
 * cancellation). Never leaves `createAgent`: the loop turns it into a `run-end` event.
 */
export class StopRun extends Error {
  constructor(
    readonly why: string,
    readonly limit?: RunResult["limit"],
  ) {
    super(why);
  }
}
