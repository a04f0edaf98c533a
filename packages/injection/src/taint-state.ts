/**
 * The taint gate's per-run state, the first stage of a check: what the run's outputs and
 * admitted calls have shown so far, read incrementally and rebuilt when the history changes.
 */
import type { RunView } from "@loopguard/core";
import { type ProvenanceIndex, provenanceIndex, updateProvenance } from "./provenance.js";
import type { SinkParseOptions } from "./sink-values.js";
import { type TaintReading, type TaintSource, taintOutput } from "./taint-sources.js";
import { argumentKeys, extractValues, matchKeysOf } from "./taint-values.js";

/** The per-run cache of the gate, kept in the gate's run memory and rebuilt from `run.outputs` and `run.calls`. */
export interface TaintState {
  /** How many outputs have been read. */
  processed: number;
  /** The texts of the outputs read, to notice a rebuilt history. */
  texts: string[];
  /** Tainted values by match key (`loose:…`, `email:…`, `amount:…`), first source kept. */
  tainted: Map<string, TaintSource>;
  /** Loose keys of values in the trusted text the last check saw, and those texts (detection taint). */
  trusted?: { texts: readonly string[]; keys: Set<string> };
  /** Loose keys of values in trusted outputs: the first output that carried each. */
  firstTrusted: Map<string, number>;
  /** How many admitted calls have been read, and the first call whose arguments carried each loose key. */
  callsProcessed: number;
  firstInArguments: Map<string, number>;
  /** Canonical values for typed sinks (provenance). */
  provenance: ProvenanceIndex;
}

/** Where the gate keeps its state: the `memory` record of its run-memory key. */
export interface TaintMemory {
  state?: TaintState;
}

function freshState(): TaintState {
  return {
    processed: 0,
    texts: [],
    tainted: new Map(),
    firstTrusted: new Map(),
    callsProcessed: 0,
    firstInArguments: new Map(),
    provenance: provenanceIndex(),
  };
}

/**
 * The gate's state for a run, brought up to date: every output not read yet is scanned for
 * tainted and trusted values, every admitted call for the values its arguments carried, and
 * the provenance index is updated. A shorter history, or a changed output, starts over.
 */
export function taintStateOf(
  run: RunView,
  memory: TaintMemory,
  reading: TaintReading,
  parseOptions: SinkParseOptions,
): TaintState {
  const { kinds } = reading;
  let state = memory.state;
  // A shorter list or a changed output means a different run history (rebuilt state): start over.
  if (
    !state ||
    state.processed > run.outputs.length ||
    (state.processed > 0 &&
      run.outputs[state.processed - 1]?.text !== state.texts[state.processed - 1])
  ) {
    state = freshState();
    memory.state = state;
  }
  for (; state.processed < run.outputs.length; state.processed++) {
    const output = run.outputs[state.processed]!;
    state.texts.push(output.text);
    const values = extractValues(output.text, kinds);
    taintOutput(state.tainted, output, values, reading);
    if (output.trust === "trusted")
      for (const value of values)
        for (const key of matchKeysOf(value))
          if (!state.firstTrusted.has(key)) state.firstTrusted.set(key, state.processed);
  }
  // Where each value first appeared in a model-written argument (any tool): a trusted output
  // that carries it only after that does not vouch for it.
  for (; state.callsProcessed < run.calls.length; state.callsProcessed++) {
    const admitted = run.calls[state.callsProcessed]!;
    if (!admitted.args) continue;
    const place = admitted.outputsBefore ?? run.outputs.length;
    for (const key of argumentKeys(admitted.args, kinds))
      if (!state.firstInArguments.has(key)) state.firstInArguments.set(key, place);
  }
  updateProvenance(state.provenance, run, parseOptions);
  return state;
}
