/**
 * The taint gate's provenance stage: every typed argument of a `require: "trusted"` sink is
 * parsed as its kind and each element must be vouched for by trusted text, a positive check on
 * parsed values, so no rewriting of an attacker's value can pass it.
 */
import type { GateDecision, RunView, ToolCall } from "@loopguard/core";
import { provenanceOf, vouchFor } from "./provenance.js";
import {
  parseSinkValue,
  type SinkElement,
  type SinkKind,
  type SinkParseOptions,
} from "./sink-values.js";
import { unparsableDecision, untrustedDecision } from "./taint-decisions.js";
import { valuesAt } from "./taint-sinks.js";
import type { TaintState } from "./taint-state.js";

/** What a provenance check looks at: the run, the gate's state for it and the task's values. */
export interface ProvenanceScope {
  run: RunView;
  state: TaintState;
  /** Canonical values of the trusted texts (from `taskValues`). */
  task: Map<string, string>;
  parseOptions: SinkParseOptions;
}

/**
 * Whether trusted text vouches for an element: its canonical form, and for a host with a
 * non-ASCII label the form (Unicode or punycode) it is written in.
 */
function isVouched(scope: ProvenanceScope, element: SinkElement): boolean {
  const { run, state, task } = scope;
  return (
    vouchFor(state.provenance, run, task, element.key) !== undefined &&
    (element.form === undefined ||
      vouchFor(state.provenance, run, task, `form:${element.key}:${element.form}`) !== undefined)
  );
}

/**
 * Provenance of the typed arguments: the first refusal, or the top-level arguments whose
 * every value is vouched for (detection taint then leaves them alone: the task wins).
 */
export function checkRequired(
  call: ToolCall,
  required: ReadonlyArray<readonly [string, SinkKind]>,
  onTaint: "deny" | "ask",
  scope: ProvenanceScope,
): GateDecision | Set<string> {
  const vouched = new Set<string>();
  for (const [path, kind] of required) {
    const top = path.split(".")[0]!;
    for (const value of valuesAt(call.args ?? {}, path)) {
      const parsed = parseSinkValue(kind, value, scope.parseOptions);
      if (!parsed.ok) return unparsableDecision(onTaint, call, path, parsed);
      for (const element of parsed.elements) {
        if (isVouched(scope, element)) continue;
        const provenance = provenanceOf(
          scope.state.provenance,
          scope.run,
          element.key,
          element.text,
          scope.parseOptions,
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
}

/** Whether every value of an argument, read as `auto`, is vouched for (the task wins). */
export function vouchedWhole(value: unknown, scope: ProvenanceScope): boolean {
  const parsed = parseSinkValue("auto", value, scope.parseOptions);
  return (
    parsed.ok &&
    parsed.elements.length > 0 &&
    parsed.elements.every((element) => isVouched(scope, element))
  );
}
