/**
 * The taint gate's detection stage: a sink argument carrying a value a flagged output tainted,
 * in any rewritten form, alone or split across neighbouring arguments, is refused, unless the
 * trusted text or a trusted output that carried it first vouches for it.
 */
import type { GateDecision, ToolCall } from "@loopguard/core";
import { taintedDecision } from "./taint-decisions.js";
import type { TaintSource } from "./taint-sources.js";
import type { TaintState } from "./taint-state.js";
import {
  argumentKeys,
  extractValues,
  matchKeysOf,
  splitKeys,
  type TaintKind,
} from "./taint-values.js";

/** Loose keys of the trusted texts, cached in the state while the same texts come back. */
function trustedKeysOf(
  state: TaintState,
  texts: readonly string[],
  kinds: readonly TaintKind[],
): Set<string> {
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
}

/** Whether a loose key is vouched for by a trusted output that carried it before any model argument did. */
function trustedOutputVouches(state: TaintState, key: string): boolean {
  const at = state.firstTrusted.get(key);
  if (at === undefined) return false;
  const written = state.firstInArguments.get(key);
  return written === undefined || at < written;
}

/** The first tainted source among an argument's keys that nothing trusted vouches for. */
function taintedHit(
  state: TaintState,
  keys: Set<string>,
  isTrusted: (key: string) => boolean,
): TaintSource | undefined {
  // A value the trusted text carries is never refused: the customer's own address stays
  // usable when a flagged page repeats it, and a domain derived from a tainted address
  // does not condemn it, as long as every address and link in the argument is trusted.
  const addresses = [...keys].filter((key) => key.startsWith("email:") || key.startsWith("url:"));
  const allTrusted = addresses.length > 0 && addresses.every(isTrusted);
  for (const key of keys) {
    const source = state.tainted.get(key);
    if (!source) continue;
    if (isTrusted(key) || matchKeysOf(source.value).some(isTrusted)) continue;
    if (source.derivedFrom && source.value.kind === "domain" && allTrusted) continue;
    return source;
  }
  return undefined;
}

/**
 * Detection taint over the checked arguments of a sink call: each argument alone, then the
 * values split across them; the refusal (or ask) of the first tainted one, else `allow`.
 */
export function checkTainted(
  call: ToolCall,
  checkedNames: readonly string[],
  state: TaintState,
  trustedTexts: readonly string[],
  settings: { kinds: readonly TaintKind[]; onTaint: "deny" | "ask" },
): GateDecision {
  const { kinds, onTaint } = settings;
  const taskKeys = trustedKeysOf(state, trustedTexts, kinds);
  const isTrusted = (key: string) => taskKeys.has(key) || trustedOutputVouches(state, key);
  for (const argument of checkedNames) {
    const source = taintedHit(state, argumentKeys(call.args[argument], kinds), isTrusted);
    if (source) return taintedDecision(onTaint, call, argument, source);
  }
  // Values split across neighbouring arguments or array items.
  const checked: Record<string, unknown> = {};
  for (const argument of checkedNames) checked[argument] = call.args[argument];
  const source = taintedHit(state, splitKeys(checked, kinds), isTrusted);
  if (source) return taintedDecision(onTaint, call, checkedNames.join("+"), source);
  return { type: "allow" };
}
