import { type EventStore, InvalidArgumentError } from "@loopguard/core";
import type { VerifyResult } from "./hash-chain.js";

/**
 * Checks a stored run's log for tampering: every event's JSON and seq, its hash chain (each
 * link; with `LOOPGUARD_LOG_KEY` every HMAC) and the head kept in the run's summary, so a log
 * cut short is caught too. Works on the JSONL, SQLite and PostgreSQL stores of this package.
 * Resolves `{ ok: true, ... }` for an intact log, or `{ ok: false, firstBadSeq, reason }`.
 *
 * @example
 * const result = await verifyRun(jsonlEventStore({ dir: ".loopguard/runs" }), "run_9f2c");
 * if (!result.ok) console.error(`event ${result.firstBadSeq}: ${result.reason}`);
 */
export async function verifyRun(store: EventStore, runId: string): Promise<VerifyResult> {
  const verify = (store as { verify?: (runId: string) => Promise<VerifyResult> } | null)?.verify;
  if (typeof verify !== "function")
    throw new InvalidArgumentError(
      `[checkpoint] verifyRun: the ${String((store as EventStore | null)?.name)} store keeps no hash chain; the jsonl, sqlite and postgres stores of @loopguard/checkpoint do`,
    );
  return verify.call(store, runId);
}
