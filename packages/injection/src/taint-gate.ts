/**
 * The taint gate (step 2.5): composes typed provenance (taint-sinks, sink-values,
 * trusted-values, written-values, provenance) and detection taint (taint-sources,
 * taint-values) over one per-run state, in three stages: read the run (taint-state), check
 * the typed arguments' provenance (typed-provenance-check), check the rest for detection taint
 * (detection-taint-check); refusals are built in taint-decisions.
 */
import type { Gate, GateDecision, SeenOutput, ToolCall } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { digestOf, gateMemory } from "@loopguard/core/plugin";
import { checkTainted } from "./detection-taint-check.js";
import { taskValues } from "./provenance.js";
import type { SinkParseOptions } from "./sink-values.js";
import {
  attributeStrings,
  defaultFreeText,
  settingsOf,
  type TaintGateOptions,
} from "./taint-gate-options.js";
import { checkedArguments, compileSinks, globPattern, requiredArguments } from "./taint-sinks.js";
import type { TaintReading } from "./taint-sources.js";
import { type TaintMemory, taintStateOf } from "./taint-state.js";
import { checkRequired, type ProvenanceScope, vouchedWhole } from "./typed-provenance-check.js";

/** The refusal of a sink called outside any run, where there is no history to judge by. */
function outsideRunDecision(call: ToolCall): GateDecision {
  return {
    type: "deny",
    reason: "taint_outside_run",
    message: `${call.tool} is a sink of the taint gate but was called outside any run, so the gate has no history to judge where its arguments came from.`,
    fixHints: ["Call guarded tools inside withRun(context, fn), or let the agent's loop run them."],
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
  const memoryKey = gateMemory(`@loopguard/injection:${name}`, (): TaintMemory => ({}));

  const trustedTexts = (call: ToolCall): readonly string[] => {
    const texts = trusted(call);
    if (!Array.isArray(texts))
      throw new InvalidArgumentError(
        "[injection] taintGate({ trusted }): trusted(call) must return an array of strings",
      );
    return texts;
  };

  return {
    name,
    step: "2.5",
    digest: () => digestOf(settings),
    check(call: ToolCall): GateDecision {
      const run = call.run;
      const required = requiredArguments(sinks, call);
      const argumentNames = checkedArguments(sinks, call, sensitiveTools, freeText);
      const hasArguments = argumentNames !== undefined && argumentNames.length > 0;
      // Outside any run there is no history: the gate cannot tell where a value came from,
      // so a sink is refused (as a RunGuard refuses outside a run); other calls pass.
      if (!run)
        return hasArguments || required.length > 0 ? outsideRunDecision(call) : { type: "allow" };
      if (!hasArguments && required.length === 0) return { type: "allow" };
      const state = taintStateOf(run, run.memory(memoryKey), reading, parseOptions);
      if (state.tainted.size === 0 && required.length === 0) return { type: "allow" };
      const texts = trustedTexts(call);
      const scope: ProvenanceScope = {
        run,
        state,
        task: taskValues(state.provenance, texts, parseOptions),
        parseOptions,
      };
      // Provenance: a positive check on parsed values, so no rewriting of an attacker's value
      // can pass it.
      let vouched = new Set<string>();
      if (required.length > 0) {
        const outcome = checkRequired(call, required, onTaint, scope);
        if (!(outcome instanceof Set)) return outcome;
        vouched = outcome;
      }
      if (!hasArguments || state.tainted.size === 0) return { type: "allow" };
      const canVouch = scope.task.size > 0 || state.provenance.trusted.size > 0;
      const checkedNames = argumentNames.filter(
        (argument) =>
          !vouched.has(argument) && !(canVouch && vouchedWhole(call.args[argument], scope)),
      );
      if (checkedNames.length === 0) return { type: "allow" };
      return checkTainted(call, checkedNames, state, texts, { kinds, onTaint });
    },
  };
}
