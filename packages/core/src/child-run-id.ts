import { sha256 } from "./digest.js";
import { InvalidArgumentError } from "./errors.js";

/** The longest run id a log accepts. */
const maxRunIdLength = 128;

/**
 * The id of the child run a parent's `asTool` call starts: the parent's run id, a dot, `c` and
 * the first 12 hex digits of the SHA-256 of `parentRunId + "\n" + callId`. The same parent and
 * call always give the same id, so a resumed parent finds the child it started (and never
 * starts a second one). A grandchild's id extends its parent's, so ids name their tree; past
 * 128 characters the id is `run_c` and 40 hex digits of the same hash instead.
 *
 * @example
 * childRunId("run_1a2b3c4d", "toolu_01XyZ"); // "run_1a2b3c4d.c" + 12 hex digits
 */
export function childRunId(parentRunId: string, callId: string): string {
  if (typeof parentRunId !== "string" || parentRunId === "")
    throw new InvalidArgumentError(
      "[core] childRunId(parentRunId, callId): parentRunId must be a non-empty run id",
    );
  if (typeof callId !== "string" || callId === "")
    throw new InvalidArgumentError(
      "[core] childRunId(parentRunId, callId): callId must be the parent's non-empty tool_use id",
    );
  const hash = sha256(`${parentRunId}\n${callId}`);
  const id = `${parentRunId}.c${hash.slice(0, 12)}`;
  return id.length <= maxRunIdLength ? id : `run_c${hash.slice(0, 40)}`;
}
