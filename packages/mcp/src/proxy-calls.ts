import type { OutputEnvelope, RunHandle, Scanner } from "@loopguard/core";
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import type { Entry, Outcome } from "./proxy-entry.js";
import { envelopeLeaves } from "./result-leaves.js";

/** Enters the proxy's run for one piece of work (the host's requests arrive outside it). */
export type EnterRun = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * The calls of one proxy: each goes through its entry's pipeline inside the proxy's run, the
 * server's progress is relayed under the host's token, and a result a scan flagged is
 * enveloped leaf by leaf. Calls in flight are tracked so stopping can let them answer first.
 */
export class ProxyCalls {
  /** Where the server's progress on a call goes (the host's progress token), by tool-use id. */
  readonly progressOf = new Map<string, (progress: Progress) => void>();
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #scanner: Scanner | undefined;
  readonly #envelope: OutputEnvelope | undefined;
  #calls = 0;
  #run: RunHandle | undefined;
  #enter: EnterRun | undefined;

  constructor(parts: { scanner: Scanner | undefined; envelope: OutputEnvelope | undefined }) {
    this.#scanner = parts.scanner;
    this.#envelope = parts.envelope;
  }

  /** The run every call enters, once it is open. */
  open(run: RunHandle, enter: EnterRun): void {
    this.#run = run;
    this.#enter = enter;
  }

  /** The calls still answering. */
  get inFlight(): ReadonlySet<Promise<unknown>> {
    return this.#inFlight;
  }

  /** Tracks a host request's work until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work)).catch(() => {});
    return work;
  }

  /** A call through the pipeline, and the envelope on what a scan flagged. */
  async call(
    entry: Entry,
    args: Record<string, unknown>,
    requestId: string | number,
    signal: AbortSignal,
    onProgress?: (progress: Progress) => void,
  ): Promise<Outcome> {
    if (entry.unusable || !entry.guarded)
      return { type: "error", text: entry.unusable ?? "[mcp] unusable" };
    this.#calls += 1;
    const toolUseId = `mcp_${this.#calls}_${String(requestId)}`;
    const guarded = entry.guarded;
    if (onProgress) this.progressOf.set(toolUseId, onProgress);
    const outcome = await this.#enter!(() => guarded(args, { toolUseId, signal })).finally(() =>
      this.progressOf.delete(toolUseId),
    );
    if (outcome.type === "refused") {
      entry.take(toolUseId);
      const hints =
        outcome.fixHints.length > 0
          ? `\nWhat to do instead:\n- ${outcome.fixHints.join("\n- ")}`
          : "";
      return {
        type: "refused",
        text: `Refused by loopguard (${outcome.reason}): ${outcome.message}${hints}`,
      };
    }
    if (outcome.type === "error") {
      entry.take(toolUseId);
      return {
        type: "error",
        text: `[mcp] ${entry.label} failed (${outcome.kind}): ${outcome.message}`,
      };
    }
    const stashed = entry.take(toolUseId);
    if (!stashed)
      return { type: "error", text: `[mcp] ${entry.gateName}: the server's result was lost` };
    const flagged = outcome.scan !== undefined && outcome.scan.verdict !== "clean";
    if (flagged && this.#scanner && this.#envelope)
      await envelopeLeaves(stashed.leaves, this.#scanner, this.#envelope, {
        source: "tool_output",
        tool: entry.gateName,
        toolUseId,
        runId: this.#run!.runId,
      });
    return { type: "ok", stashed, flagged, toolUseId };
  }
}
