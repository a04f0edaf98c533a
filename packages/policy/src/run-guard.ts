import {
  canonicalJson,
  type DenyDecision,
  defaultHaltOn,
  digestOf,
  type GateDecision,
  type HaltingGate,
  InvalidArgumentError,
  type RunState,
  sha256,
  type ToolCall,
} from "@loopguard/core";
import { compileGlobs, type GlobMatcher } from "./glob.js";
import { describeValue } from "./predicate.js";

/** Options of `runGuard()`. */
export interface RunGuardOptions {
  /** Refusal reasons that halt the run. Default `["kill_switch", "policy_indeterminate"]`. */
  haltOn?: readonly string[];
  /** Tool-name globs whose refusal (for any reason) halts the run. Default none. */
  irreversibleTools?: readonly string[];
  /** Refuse calls that repeat a block of calls. Default `true`. */
  detectLoops?: boolean;
  /** How many times in a row a block must repeat to trip: 2 to 100. Default 5. */
  loopRepeats?: number;
  /** The longest block (in calls) looked for: 1 to 10. Default 5. */
  maxLoopPeriod?: number;
}

/** The RunGuard gate (step 2.3, `run_loop`). */
export interface RunGuardGate extends HaltingGate {
  readonly name: "run_loop";
  readonly step: "2.3";
  /** The settings in force, defaults filled in. */
  readonly settings: Readonly<Required<RunGuardOptions>>;
  digest(): string;
  check(call: ToolCall): GateDecision;
  haltOnRefusal(call: ToolCall, decision: DenyDecision): boolean;
}

/** Per-run loop state, kept in `run.scratch` and rebuilt from `run.calls` when missing. */
interface LoopState {
  /** How many of `run.calls` are folded in. */
  seen: number;
  /** The last `period` call keys, as a ring indexed by call position. */
  ring: string[];
  /** `streak[p]`: how many calls in a row ended equal to the call `p` before them. */
  streak: Int32Array;
  /** How many of `run.refusals` were looked at, and whether a loop warning is among them. */
  refusalsSeen: number;
  warned: boolean;
}

const allowDecision = Object.freeze({ type: "allow" as const });
const reasonPattern = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Builds the RunGuard (step 2.3, `run_loop`): it decides which refusals halt the run, and
 * refuses calls that go round in a loop.
 *
 * Halting: a refusal halts the run when its reason is in `haltOn` or its tool matches
 * `irreversibleTools`; from then on core refuses every call of the run as `run_halted`.
 *
 * Loops: over the run's admitted calls, as (tool, digest of canonical arguments), when a block
 * of 1 to `maxLoopPeriod` calls has just repeated `loopRepeats` times in a row counting the
 * current call, the call is refused as `loop_detected`; the next call that completes a loop
 * halts the run. One call made five times trips on the fifth; a three-call cycle on its
 * fifteenth call; the same tool with different arguments never. Each check costs
 * O(maxLoopPeriod) amortised: the state follows `run.calls` incrementally.
 *
 * A call outside any run is refused as `run_guard_outside_run`.
 *
 * @example
 * const agent = createAgent({ model, tools, gates: [policy(rules), runGuard({ irreversibleTools: ["issue_refund"] })] });
 */
export function runGuard(options: RunGuardOptions = {}): RunGuardGate {
  const settings = resolveRunGuardOptions(options);
  const irreversible: GlobMatcher | undefined =
    settings.irreversibleTools.length > 0
      ? compileGlobs(settings.irreversibleTools, "runGuard({ irreversibleTools })")
      : undefined;
  const haltOn = new Set(settings.haltOn);
  const period = settings.maxLoopPeriod;
  const needed = new Int32Array(period + 1);
  for (let p = 1; p <= period; p += 1) needed[p] = p * (settings.loopRepeats - 1);
  const scratchKey = `loopguard.policy.run_loop:${period}`;
  const digest = sha256(canonicalJson({ kind: "run_guard", ...settings }));

  const stateOf = (run: RunState): LoopState => {
    let state = run.scratch.get(scratchKey) as LoopState | undefined;
    if (!state || state.seen > run.calls.length || state.refusalsSeen > run.refusals.length) {
      state = {
        seen: 0,
        ring: new Array<string>(period).fill(""),
        streak: new Int32Array(period + 1),
        refusalsSeen: 0,
        warned: false,
      };
      run.scratch.set(scratchKey, state);
    }
    for (; state.seen < run.calls.length; state.seen += 1) {
      const call = run.calls[state.seen]!;
      const key = `${call.tool}\u0000${call.argsDigest}`;
      const index = state.seen;
      for (let p = 1; p <= period; p += 1) {
        state.streak[p] =
          index >= p && state.ring[(index - p) % period] === key ? state.streak[p]! + 1 : 0;
      }
      state.ring[index % period] = key;
    }
    for (; state.refusalsSeen < run.refusals.length; state.refusalsSeen += 1) {
      if (run.refusals[state.refusalsSeen]!.reason === "loop_detected") state.warned = true;
    }
    return state;
  };

  const gate: RunGuardGate = {
    name: "run_loop",
    step: "2.3",
    settings,
    digest: () => digest,
    check(call) {
      const run = call.run;
      if (!run) {
        return {
          type: "deny",
          reason: "run_guard_outside_run",
          message: `${call.tool} is guarded by a RunGuard but was called outside any run, so its halt latch and loop detection cannot work.`,
          fixHints: ["Call guarded tools inside withRun({ agentId }, async (run) => { ... })."],
        };
      }
      if (!settings.detectLoops) return allowDecision;
      const state = stateOf(run);
      const index = run.calls.length;
      const key = `${call.tool}\u0000${digestOf(call.args)}`;
      let tripped = 0;
      for (let p = 1; p <= period; p += 1) {
        const streak =
          index >= p && state.ring[(index - p) % period] === key ? state.streak[p]! + 1 : 0;
        if (streak >= needed[p]!) {
          tripped = p;
          break;
        }
      }
      if (tripped === 0) return allowDecision;
      const block = tripped === 1 ? `the same ${call.tool} call` : `the same ${tripped} calls`;
      const details = { period: tripped, repeats: settings.loopRepeats };
      if (state.warned) {
        return {
          type: "deny",
          reason: "loop_detected",
          message: `This run repeated ${block} ${settings.loopRepeats} times in a row again after a warning, so it was halted.`,
          fixHints: [
            "Stop calling tools and tell the user what you tried and why it did not work.",
          ],
          halt: true,
          details: { ...details, halted: true },
        };
      }
      return {
        type: "deny",
        reason: "loop_detected",
        message: `This call would repeat ${block} ${settings.loopRepeats} times in a row with the same arguments; it was refused because the run looks stuck in a loop.`,
        fixHints: [
          "Change approach: use what earlier calls returned, try different arguments or another tool, or answer the user.",
          "One more repeated loop ends the run.",
        ],
        details,
      };
    },
    haltOnRefusal(call, decision) {
      if (haltOn.has(decision.reason)) return true;
      return irreversible?.test(call.tool) === true;
    },
  };
  return Object.freeze(gate);
}

/** Validates RunGuard options and fills in the defaults; throws a clear error on a bad setting. */
export function resolveRunGuardOptions(
  options: RunGuardOptions,
): Readonly<Required<RunGuardOptions>> {
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      '[policy] runGuard(options): options must be an object such as { irreversibleTools: ["issue_refund"] }',
    );
  const haltOn = options.haltOn ?? defaultHaltOn;
  if (
    !Array.isArray(haltOn) ||
    haltOn.some((reason) => typeof reason !== "string" || !reasonPattern.test(reason))
  ) {
    throw new InvalidArgumentError(
      `[policy] runGuard({ haltOn }): haltOn must be an array of snake_case reason codes such as ["kill_switch", "policy_indeterminate"], got ${describeValue(haltOn)}`,
    );
  }
  const irreversibleTools = options.irreversibleTools ?? [];
  if (
    !Array.isArray(irreversibleTools) ||
    irreversibleTools.some((glob) => typeof glob !== "string" || glob.length === 0)
  ) {
    throw new InvalidArgumentError(
      `[policy] runGuard({ irreversibleTools }): irreversibleTools must be an array of tool globs such as ["issue_refund", "delete_*"], got ${describeValue(irreversibleTools)}`,
    );
  }
  const detectLoops = options.detectLoops ?? true;
  if (typeof detectLoops !== "boolean")
    throw new InvalidArgumentError(
      `[policy] runGuard({ detectLoops }): detectLoops must be a boolean, got ${describeValue(detectLoops)}`,
    );
  const loopRepeats = options.loopRepeats ?? 5;
  if (!Number.isInteger(loopRepeats) || loopRepeats < 2 || loopRepeats > 100) {
    throw new InvalidArgumentError(
      `[policy] runGuard({ loopRepeats }): loopRepeats must be an integer from 2 to 100 (default 5), got ${describeValue(loopRepeats)}`,
    );
  }
  const maxLoopPeriod = options.maxLoopPeriod ?? 5;
  if (!Number.isInteger(maxLoopPeriod) || maxLoopPeriod < 1 || maxLoopPeriod > 10) {
    throw new InvalidArgumentError(
      `[policy] runGuard({ maxLoopPeriod }): maxLoopPeriod must be an integer from 1 to 10 (default 5), got ${describeValue(maxLoopPeriod)}`,
    );
  }
  return Object.freeze({
    haltOn: Object.freeze([...new Set(haltOn)].sort()),
    irreversibleTools: Object.freeze([...irreversibleTools]),
    detectLoops,
    loopRepeats,
    maxLoopPeriod,
  });
}
