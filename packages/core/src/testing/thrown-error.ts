import { LoopguardError } from "../errors.js";

/**
 * Calls `make` (typically with input its types forbid) and returns the loopguard error it threw,
 * for the bad-input tests of every package. Throws, failing the test, when `make` returns
 * normally or throws anything that is not a loopguard error (a raw TypeError, say), with what it
 * threw as the cause. Needs no test runner.
 *
 * @example
 * expect(thrownError(() => policy(bad("deny"))).message).toMatch(/^\[policy\] /);
 */
export function thrownError(make: () => unknown): LoopguardError {
  try {
    make();
  } catch (error) {
    if (LoopguardError.isInstance(error)) return error;
    throw new Error(`[core] thrownError: not a loopguard error: ${String(error)}`, {
      cause: error,
    });
  }
  throw new Error("[core] thrownError: expected the call to throw; it returned normally");
}

/**
 * `thrownError` for a promise: the loopguard error it rejected with. Rejects, failing the test,
 * when the promise resolves or rejects with anything that is not a loopguard error.
 */
export async function rejectedError(promise: Promise<unknown>): Promise<LoopguardError> {
  return promise.then(
    () => {
      throw new Error("[core] rejectedError: expected a rejection; the promise resolved");
    },
    (error: unknown) =>
      thrownError(() => {
        throw error;
      }),
  );
}
