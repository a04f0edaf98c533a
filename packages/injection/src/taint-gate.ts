/**
 * The taint gate (step 2.5): composes typed provenance (taint-sinks, sink-values,
 * trusted-values, written-values, provenance) and detection taint (taint-sources,
 * taint-values) over one per-run state; refusals are built in taint-decisions.
 */
import type { Gate, GateDecision, RunView, SeenOutput, ToolCall } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { digestOf, gateMemory } from "@loopguard/core/plugin";
import {
  type ProvenanceIndex,
  provenanceIndex,
  provenanceOf,
  taskValues,
  updateProvenance,
  vouchFor,
} from "./provenance.js";
import { parseSinkValue, type SinkElement, type SinkParseOptions } from "./sink-values.js";
import { taintedDecision, unparsableDecision, untrustedDecision } from "./taint-decisions.js";
import {
  attributeStrings,
  defaultFreeText,
  settingsOf,
  type TaintGateOptions,
} from "./taint-gate-options.js";
import {
  checkedArguments,
  compileSinks,
  globPattern,
  requiredArguments,
  valuesAt,
} from "./taint-sinks.js";
import { type TaintReading, type TaintSource, taintOutput } from "./taint-sources.js";
import { argumentKeys, extractValues, matchKeysOf, splitKeys } from "./taint-values.js";

/** The per-run cache of the gate, kept in the gate's run memory and rebuilt from `run.outputs` and `run.calls`. */
interface TaintState {
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
 * Creates the taint gate (step 2.5, `taint`), two defences in one:
 *
 * - **Provenance** (`sinks: [{ tool, args, require: "trusted" }]`): each named argument is
 *   parsed as its kind the way the sink parses it (WHATWG URL with IDNA hosts, an email's
 *   mailbox and IDNA domain, E.164 phones, IBANs with their checksum, whole ids, amounts and
 *   paths), and every element must equal, exactly, a value found the same way in trusted text
 *   (the task, run attributes, or a trusted tool's output that carried it before the model
 *   wrote it in any form); otherwise `untrusted_provenance`, or `unparsable_argument` for a
 *   value that is not of its kind.
 * - **Detection taint**: values found in tool output that a scanner flagged are tainted for the
 *   run, and a sink call carrying one, in any rewritten form, is refused as `tainted_argument`,
 *   unless the task or a trusted output carries it (the task wins over a repeat).
 *
 * With `onTaint: "ask"` refusals become approvals. State is derived from `run.outputs` and
 * `run.calls`, which core rebuilds from the log, so it survives resume.
 *
 * @example
 * const envelope = quarantine();
 * const gate = taintGate({ envelope, tools, sinks: [{ tool: "send_email", args: { to: "email" }, require: "trusted" }] });
 * const agent = createAgent({ model, tools, scanner: defaultScanner(), envelope, gates: [gate] });
 */
export function taintGate(options: TaintGateOptions = {}): Gate {
  const { minVerdict, onTaint, kinds, sourceTools, envelopeTag } = settingsOf(options);
  const sinks = compileSinks(options.sinks, options.tools);
  const sourcePatterns = sourceTools?.map(globPattern);
  const sensitiveTools = options.sensitiveTools ?? true;
  const derive = options.derive ?? true;
  const freeText = new Set(options.freeText ?? defaultFreeText);
  const trusted = options.trusted ?? ((call: ToolCall) => attributeStrings(call.run));
  const parseOptions: SinkParseOptions = options.phoneCountry
    ? { phoneCountry: options.phoneCountry }
    : {};
  const name = options.name ?? "taint";
  const reading: TaintReading = {
    kinds,
    minVerdict,
    isSource: (output: SeenOutput) =>
      !sourcePatterns || sourcePatterns.some((pattern) => pattern.test(output.tool)),
    ...(options.envelope ? { envelope: options.envelope } : {}),
    derive,
  };
  const settings = {
    minVerdict,
    onTaint,
    kinds: [...kinds],
    sources: sourceTools ?? null,
    sinks: sinks.map((sink) => [sink.tool, sink.kinds ?? null, sink.require ?? null]),
    sensitiveTools,
    envelope: envelopeTag ?? null,
    derive,
    freeText: [...freeText].sort(),
    phoneCountry: options.phoneCountry ?? null,
  };
  // Per-run memory of this gate (keys compare by identity: two taint gates never share it).
  const memoryKey = gateMemory(`@loopguard/injection:${name}`, (): { state?: TaintState } => ({}));

  const stateOf = (run: RunView): TaintState => {
    const memory = run.memory(memoryKey);
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
  };

  const trustedTexts = (call: ToolCall): readonly string[] => {
    const texts = trusted(call);
    if (!Array.isArray(texts))
      throw new InvalidArgumentError(
        "[injection] taintGate({ trusted }): trusted(call) must return an array of strings",
      );
    return texts;
  };

  /** Loose keys of the trusted texts (detection taint), cached while the same texts come back. */
  const trustedKeysOf = (state: TaintState, texts: readonly string[]): Set<string> => {
    const cache = state.trusted;
    const same =
      cache !== undefined &&
      cache.texts.length === texts.length &&
      cache.texts.every((text, index) => text === texts[index]);
    if (!same) {
      const keys = new Set<string>();
      for (const text of texts) {
        if (typeof text !== "string") continue;
        for (const value of extractValues(text, kinds))
          for (const key of matchKeysOf(value)) keys.add(key);
      }
      state.trusted = { texts: [...texts], keys };
    }
    return state.trusted!.keys;
  };

  /** Whether a loose key is vouched for by a trusted output that carried it before any model argument did. */
  const trustedOutputVouches = (state: TaintState, key: string): boolean => {
    const at = state.firstTrusted.get(key);
    if (at === undefined) return false;
    const written = state.firstInArguments.get(key);
    return written === undefined || at < written;
  };

  /**
   * Whether trusted text vouches for an element: its canonical form, and for a host with a
   * non-ASCII label the form (Unicode or punycode) it is written in.
   */
  const isVouched = (
    run: RunView,
    state: TaintState,
    task: Map<string, string>,
    element: SinkElement,
  ): boolean =>
    vouchFor(state.provenance, run, task, element.key) !== undefined &&
    (element.form === undefined ||
      vouchFor(state.provenance, run, task, `form:${element.key}:${element.form}`) !== undefined);

  /**
   * Provenance of the typed arguments: the first refusal, or the top-level arguments whose
   * every value is vouched for (detection taint then leaves them alone: the task wins).
   */
  const checkRequired = (
    call: ToolCall,
    run: RunView,
    state: TaintState,
    task: Map<string, string>,
  ): GateDecision | Set<string> => {
    const vouched = new Set<string>();
    for (const [path, kind] of requiredArguments(sinks, call)) {
      const top = path.split(".")[0]!;
      for (const value of valuesAt(call.args ?? {}, path)) {
        const parsed = parseSinkValue(kind, value, parseOptions);
        if (!parsed.ok) return unparsableDecision(onTaint, call, path, parsed);
        for (const element of parsed.elements) {
          if (isVouched(run, state, task, element)) continue;
          const provenance = provenanceOf(
            state.provenance,
            run,
            element.key,
            element.text,
            parseOptions,
          );
          return untrustedDecision(
            onTaint,
            call,
            path,
            { ...element, ...(kind === "auto" ? { inferred: true } : {}) },
            provenance,
          );
        }
      }
      vouched.add(top);
    }
    return vouched;
  };

  /** Whether every value of an argument, read as `auto`, is vouched for (the task wins). */
  const vouchedWhole = (
    value: unknown,
    run: RunView,
    state: TaintState,
    task: Map<string, string>,
  ): boolean => {
    const parsed = parseSinkValue("auto", value, parseOptions);
    return (
      parsed.ok &&
      parsed.elements.length > 0 &&
      parsed.elements.every((element) => isVouched(run, state, task, element))
    );
  };

  return {
    name,
    step: "2.5",
    digest: () => digestOf(settings),
    check(call: ToolCall): GateDecision {
      const run = call.run;
      const required = requiredArguments(sinks, call);
      const argumentNames = checkedArguments(sinks, call, sensitiveTools, freeText);
      if (!run) {
        // Outside any run there is no history: the gate cannot tell where a value came from,
        // so a sink is refused (as a RunGuard refuses outside a run); other calls pass.
        const sink = (argumentNames?.length ?? 0) > 0 || required.length > 0;
        if (!sink) return { type: "allow" };
        return {
          type: "deny",
          reason: "taint_outside_run",
          message: `${call.tool} is a sink of the taint gate but was called outside any run, so the gate has no history to judge where its arguments came from.`,
          fixHints: [
            "Call guarded tools inside withRun(context, fn), or let the agent's loop run them.",
          ],
        };
      }
      if ((!argumentNames || argumentNames.length === 0) && required.length === 0)
        return { type: "allow" };
      const state = stateOf(run);
      if (state.tainted.size === 0 && required.length === 0) return { type: "allow" };
      const texts = trustedTexts(call);
      const task = taskValues(state.provenance, texts, parseOptions);
      // Provenance: a positive check on parsed values, so no rewriting of an attacker's value
      // can pass it.
      let vouched = new Set<string>();
      if (required.length > 0) {
        const outcome = checkRequired(call, run, state, task);
        if (!(outcome instanceof Set)) return outcome;
        vouched = outcome;
      }
      if (!argumentNames || argumentNames.length === 0 || state.tainted.size === 0)
        return { type: "allow" };
      const canVouch = task.size > 0 || state.provenance.trusted.size > 0;
      const checkedNames = argumentNames.filter(
        (argument) =>
          !vouched.has(argument) &&
          !(canVouch && vouchedWhole(call.args[argument], run, state, task)),
      );
      if (checkedNames.length === 0) return { type: "allow" };
      const taskKeys = trustedKeysOf(state, texts);
      const trustedKeys = {
        has: (key: string) => taskKeys.has(key) || trustedOutputVouches(state, key),
      };
      const hit = (keys: Set<string>): TaintSource | undefined => {
        // A value the trusted text carries is never refused: the customer's own address stays
        // usable when a flagged page repeats it, and a domain derived from a tainted address
        // does not condemn it, as long as every address and link in the argument is trusted.
        const addresses = [...keys].filter(
          (key) => key.startsWith("email:") || key.startsWith("url:"),
        );
        const allTrusted = addresses.length > 0 && addresses.every((key) => trustedKeys.has(key));
        for (const key of keys) {
          const source = state.tainted.get(key);
          if (!source) continue;
          if (
            trustedKeys.has(key) ||
            matchKeysOf(source.value).some((match) => trustedKeys.has(match))
          )
            continue;
          if (source.derivedFrom && source.value.kind === "domain" && allTrusted) continue;
          return source;
        }
        return undefined;
      };
      for (const argument of checkedNames) {
        const source = hit(argumentKeys(call.args[argument], kinds));
        if (source) return taintedDecision(onTaint, call, argument, source);
      }
      // Values split across neighbouring arguments or array items.
      const checked: Record<string, unknown> = {};
      for (const argument of checkedNames) checked[argument] = call.args[argument];
      const source = hit(splitKeys(checked, kinds));
      if (source) return taintedDecision(onTaint, call, checkedNames.join("+"), source);
      return { type: "allow" };
    },
  };
}
