import {
  type DenyDecision,
  type GateDecision,
  InvalidArgumentError,
  type ToolCall,
} from "@loopguard/core";
import {
  canonicalJson,
  defaultHaltOn,
  digestOf,
  gateMemory,
  type HaltingGate,
  sha256,
} from "@loopguard/core/plugin";
import { compileGlobs, type GlobMatcher } from "./glob.js";
import {
  type NoProgressFinding,
  type NoProgressOptions,
  type NoProgressSettings,
  noProgressDetector,
  ownReasons,
  resolveNoProgress,
} from "./no-progress.js";
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
  /**
   * Detect runs that make no progress without repeating exactly: near repeats, the same
   * result again and again, A-B-A-B oscillation, a streak of refusals. Off by default (so the
   * same tool with different arguments never trips); `true` turns every signal on with the
   * measured defaults, an object tunes them. The response is graded: the first detection is
   * refused as `no_progress` with fix hints, the second asks a person (`no_progress_approval`),
   * the third halts the run (`run_halted`, halt reason `no_progress`).
   */
  noProgress?: boolean | NoProgressOptions;
}

/** The RunGuard settings in force, defaults filled in. */
export interface RunGuardSettings {
  haltOn: readonly string[];
  irreversibleTools: readonly string[];
  detectLoops: boolean;
  loopRepeats: number;
  maxLoopPeriod: number;
  /** `false` when off. */
  noProgress: Readonly<NoProgressSettings> | false;
}

/** The RunGuard gate (step 2.3, `run_loop`). */
export interface RunGuardGate extends HaltingGate {
  readonly name: "run_loop";
  readonly step: "2.3";
  /** The settings in force, defaults filled in. */
  readonly settings: Readonly<RunGuardSettings>;
  digest(): string;
  check(call: ToolCall): GateDecision;
  haltOnRefusal(call: ToolCall, decision: DenyDecision): boolean | string;
}

/** The run as a gate sees it (whatever core hands gates in `call.run`). */
type GateRun = NonNullable<ToolCall["run"]>;

/** Per-run loop state, kept in the gate's run memory and rebuilt from `run.calls` when missing. */
interface LoopState {
  /** How many of `run.calls` are folded in. */
  seen: number;
  /** How many of them are counted (passed a RunGuard): the position of the next call. */
  counted: number;
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
 * current call, the call is refused as `loop_detected` with hints to change approach; the
 * next call that completes a loop halts the run and is refused as `run_halted` (its details
 * name the loop; the run's halt reason is `loop_detected`). One call made five times trips on
 * the fifth; a three-call cycle on its fifteenth call; the same tool with different arguments
 * never. Each check costs O(maxLoopPeriod) amortised: the state follows `run.calls`
 * incrementally.
 *
 * No progress (opt-in, `noProgress`): see {@link RunGuardOptions.noProgress}.
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
  // Memory of this gate only (keys compare by identity): a shadow RunGuard beside the live one
  // keeps its own state.
  const memoryKey = gateMemory("run_guard.loops", () => ({
    state: undefined as LoopState | undefined,
  }));
  const digest = sha256(
    canonicalJson({
      kind: "run_guard",
      ...settings,
      // Off is left out so digests of guards without it stay what they were.
      noProgress: settings.noProgress === false ? undefined : { ...settings.noProgress },
    } as never),
  );
  const detector = settings.noProgress ? noProgressDetector(settings.noProgress) : undefined;

  const stateOf = (run: GateRun): LoopState => {
    const box = run.memory(memoryKey);
    let state = box.state;
    if (!state || state.seen > run.calls.length || state.refusalsSeen > run.refusals.length) {
      state = {
        seen: 0,
        counted: 0,
        ring: new Array<string>(period).fill(""),
        streak: new Int32Array(period + 1),
        refusalsSeen: 0,
        warned: false,
      };
      box.state = state;
    }
    for (; state.seen < run.calls.length; state.seen += 1) {
      const call = run.calls[state.seen]!;
      // Only calls whose pipeline carried a RunGuard count (a guardTool without one, in the
      // same run, does not); calls recorded without their steps count, as before.
      if (call.passed !== undefined && !call.passed.includes("2.3:run_loop")) continue;
      const key = `${call.tool}\u0000${call.argsDigest}`;
      const index = state.counted;
      for (let p = 1; p <= period; p += 1) {
        state.streak[p] =
          index >= p && state.ring[(index - p) % period] === key ? state.streak[p]! + 1 : 0;
      }
      state.ring[index % period] = key;
      state.counted += 1;
    }
    for (; state.refusalsSeen < run.refusals.length; state.refusalsSeen += 1) {
      if (run.refusals[state.refusalsSeen]!.reason === "loop_detected") state.warned = true;
    }
    return state;
  };

  const detectLoop = (call: ToolCall, run: GateRun): GateDecision => {
    const state = stateOf(run);
    const index = state.counted;
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
    // The block that repeated, oldest first: the tools of the last `tripped - 1` calls, then this one.
    const tools: string[] = [];
    for (let back = tripped - 1; back >= 1; back -= 1) {
      const ringKey = state.ring[(index - back) % period]!;
      tools.push(ringKey.slice(0, ringKey.indexOf("\u0000")));
    }
    tools.push(call.tool);
    const loop = { period: tripped, repeats: settings.loopRepeats, tools };
    if (state.warned) {
      return {
        type: "deny",
        reason: "run_halted",
        message: `This run repeated ${block} ${settings.loopRepeats} times in a row again after a warning, so it was halted (loop_detected).`,
        fixHints: ["Stop calling tools and tell the user what you tried and why it did not work."],
        halt: true,
        haltReason: "loop_detected",
        details: { haltReason: "loop_detected", ...loop },
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
      details: loop,
    };
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
      const loop = settings.detectLoops ? detectLoop(call, run) : allowDecision;
      if (loop.type !== "allow" || !detector) return loop;
      const finding = detector.detect(call, run);
      return finding ? noProgressDecision(call, finding, detector.stage(run, call)) : allowDecision;
    },
    haltOnRefusal(call, decision) {
      if (haltOn.has(decision.reason)) return true;
      // The RunGuard's own warnings carry their own escalation (the next loop, or the next
      // no-progress step, halts): on an irreversible tool they refuse without halting, so the
      // model gets the chance the warning offers. Nothing ran either way.
      if (irreversible?.test(call.tool) === true && !warnings.has(decision.reason)) return true;
      // A long streak of refusals halts even when they happen before step 2.3.
      if (
        detector &&
        call.run &&
        !ownReasons.has(decision.reason) &&
        detector.haltsStreak(call.run)
      )
        return "no_progress";
      return false;
    },
  };
  return Object.freeze(gate);
}

/** Validates RunGuard options and fills in the defaults; throws a clear error on a bad setting. */
export function resolveRunGuardOptions(options: RunGuardOptions): Readonly<RunGuardSettings> {
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
    noProgress: resolveNoProgress(options.noProgress),
  });
}

/** The RunGuard's warning refusals: they do not halt on their own, even on an irreversible tool. */
const warnings: ReadonlySet<string> = new Set(["loop_detected", "no_progress"]);

/** The graded answer to a no-progress finding: warn, then ask a person, then halt. */
function noProgressDecision(
  call: ToolCall,
  finding: NoProgressFinding,
  stage: "warn" | "ask" | "halt",
): GateDecision {
  const details = { signal: finding.signal, count: finding.count, stage };
  if (stage === "warn")
    return {
      type: "deny",
      reason: "no_progress",
      message: `This call was refused because the run is not making progress: ${finding.what}.`,
      fixHints: [
        "Change approach: use what earlier calls returned, try a different tool, or answer the user with what you have.",
        "If this goes on, the next such call needs a person's approval, and the one after ends the run.",
      ],
      details,
    };
  if (stage === "ask")
    return {
      type: "ask",
      reason: "no_progress_approval",
      message: `The run was warned that it is not making progress and goes on (${finding.what}); a person must approve this ${call.tool} call.`,
      details,
    };
  return {
    type: "deny",
    reason: "run_halted",
    message: `This run made no progress after a warning and a review (${finding.what}), so it was halted (no_progress).`,
    fixHints: ["Stop calling tools and tell the user what you tried and why it did not work."],
    halt: true,
    haltReason: "no_progress",
    details: { haltReason: "no_progress", ...details },
  };
}
