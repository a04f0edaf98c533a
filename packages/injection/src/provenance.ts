/**
 * Provenance for typed sink arguments: which canonical values trusted text carries (the task
 * and run attributes, and trusted tools' outputs with the place each first appeared), what the
 * model wrote into arguments before that, and where a refused value came from.
 */
import type { RunView } from "@loopguard/core";
import { parsePhoneNumberWithError } from "libphonenumber-js/min";
import type { SinkParseOptions } from "./sink-values.js";
import { type FoundValue, trustedValuesOf } from "./trusted-values.js";
import { formsCarry, needleOf, writtenForms, writtenJoin } from "./written-values.js";

/** Where a value a sink receives came from, as the gate can state it. */
export type ValueProvenance =
  | { source: "task" | "attributes" }
  | { source: "trusted_output" | "untrusted_output"; tool: string; call: string }
  | { source: "model_argument"; tool: string; call: string }
  | { source: "nowhere" };

/** The per-run provenance index, rebuilt from `run.outputs` and `run.calls`. */
export interface ProvenanceIndex {
  /** How many outputs have been read. */
  outputs: number;
  /** Canonical values of trusted outputs: the first output that carried each, and how it was written. */
  trusted: Map<string, { at: number; raw: string }>;
  /** How many admitted calls have been read. */
  calls: number;
  /** Each admitted call's written forms and its place in the history (outputs seen before it). */
  written: Array<{ place: number; forms: string; tool: string; call: string; end: number }>;
  /** Every admitted call's leaves folded and joined in order, call after call (`writtenJoin`). */
  joined: string;
  /**
   * Canonical values of untrusted outputs (the first output that carried each), built only
   * when a refusal needs to say where a value came from, and how many outputs it covers.
   */
  untrusted: Map<string, number>;
  untrustedOutputs: number;
  /** Canonical values of the trusted text (task, attributes) the last check saw. */
  task?: { texts: readonly string[]; values: Map<string, string> };
}

/** An empty index. */
export function provenanceIndex(): ProvenanceIndex {
  return {
    outputs: 0,
    trusted: new Map(),
    calls: 0,
    written: [],
    joined: "",
    untrusted: new Map(),
    untrustedOutputs: 0,
  };
}

/** Reads the outputs and calls the index has not seen. */
export function updateProvenance(
  index: ProvenanceIndex,
  run: RunView,
  options: SinkParseOptions,
): void {
  for (; index.outputs < run.outputs.length; index.outputs++) {
    const output = run.outputs[index.outputs]!;
    if (output.trust !== "trusted") continue;
    for (const value of trustedValuesOf(output.text, options))
      if (!index.trusted.has(value.key))
        index.trusted.set(value.key, { at: index.outputs, raw: value.raw });
  }
  for (; index.calls < run.calls.length; index.calls++) {
    const call = run.calls[index.calls]!;
    if (!call.args) continue;
    index.joined += writtenJoin(call.args);
    index.written.push({
      place: call.outputsBefore ?? run.outputs.length,
      forms: writtenForms(call.args),
      tool: call.tool,
      call: call.toolUseId,
      end: index.joined.length,
    });
  }
}

/** The canonical values of the trusted texts, cached while the same texts come back. */
export function taskValues(
  index: ProvenanceIndex,
  texts: readonly string[],
  options: SinkParseOptions,
): Map<string, string> {
  const cache = index.task;
  if (
    cache &&
    cache.texts.length === texts.length &&
    cache.texts.every((text, position) => text === texts[position])
  )
    return cache.values;
  const values = new Map<string, string>();
  for (const text of texts) {
    if (typeof text !== "string") continue;
    for (const value of trustedValuesOf(text, options))
      if (!values.has(value.key)) values.set(value.key, value.raw);
  }
  index.task = { texts: [...texts], values };
  return values;
}

/** The national digits of an E.164 key, for the model-written check. */
function nationalDigits(key: string): string | undefined {
  if (!key.startsWith("phone:")) return undefined;
  try {
    return String(parsePhoneNumberWithError(key.slice(6)).nationalNumber);
  } catch {
    return undefined;
  }
}

/**
 * Whether the model wrote a value into an admitted call's arguments before the output at
 * `at` (in any folded form, joined across arguments or spelled out).
 */
export function writtenBefore(index: ProvenanceIndex, at: number, value: FoundValue): boolean {
  const digits = nationalDigits(value.key);
  let needle: string | undefined;
  let end = 0;
  for (const entry of index.written) {
    if (entry.place > at) continue;
    needle ??= needleOf(value.raw);
    if (formsCarry(entry.forms, needle, digits)) return true;
    end = entry.end;
  }
  // Written in pieces across calls before the output: the calls' joined leaves carry it.
  if (needle === undefined || needle.length < 6) return false;
  const found = index.joined.indexOf(needle);
  return found >= 0 && found + needle.length <= end;
}

/**
 * How a canonical value is vouched for: by the task or attributes, or by a trusted output that
 * carried it before the model wrote it; `undefined` when nothing vouches for it.
 */
export function vouchFor(
  index: ProvenanceIndex,
  run: RunView,
  task: Map<string, string>,
  key: string,
): ValueProvenance | undefined {
  if (task.has(key)) return { source: "task" };
  const trusted = index.trusted.get(key);
  if (!trusted || writtenBefore(index, trusted.at, { key, raw: trusted.raw })) return undefined;
  const output = run.outputs[trusted.at]!;
  return { source: "trusted_output", tool: output.tool, call: output.toolUseId };
}

/**
 * Where an unvouched value came from (for the refusal): the newest untrusted output that
 * carries it as written (or, in outputs up to 64 KB, in its canonical form), else a
 * model-written argument, else nowhere. Runs only on a refusal; naming the source is a message,
 * not a decision: the value is refused either way.
 */
export function provenanceOf(
  index: ProvenanceIndex,
  run: RunView,
  key: string,
  written: string,
  options: SinkParseOptions,
): ValueProvenance {
  // The value as the model wrote it, in the untrusted outputs (newest first): a plain search,
  // linear in their text, so a run that read megabytes of pages does not stall on a refusal.
  const lower = written.toLowerCase();
  for (let at = run.outputs.length - 1; at >= 0; at--) {
    const output = run.outputs[at]!;
    if (output.trust === "trusted") continue;
    if (
      output.text.includes(written) ||
      (output.text.length <= 262_144 && output.text.toLowerCase().includes(lower))
    )
      return { source: "untrusted_output", tool: output.tool, call: output.toolUseId };
  }
  // Then its canonical form, in untrusted outputs of up to 64 KB (parsed once per run).
  for (; index.untrustedOutputs < run.outputs.length; index.untrustedOutputs++) {
    const output = run.outputs[index.untrustedOutputs]!;
    if (output.trust === "trusted" || output.text.length > 65_536) continue;
    for (const value of trustedValuesOf(output.text, options))
      if (!index.untrusted.has(value.key)) index.untrusted.set(value.key, index.untrustedOutputs);
  }
  const at = index.untrusted.get(key);
  if (at !== undefined) {
    const output = run.outputs[at]!;
    return { source: "untrusted_output", tool: output.tool, call: output.toolUseId };
  }
  const digits = nationalDigits(key);
  const needle = needleOf(written);
  const call = index.written.find((entry) => formsCarry(entry.forms, needle, digits));
  if (call) return { source: "model_argument", tool: call.tool, call: call.call };
  return { source: "nowhere" };
}
