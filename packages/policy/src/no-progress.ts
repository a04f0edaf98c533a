import { InvalidArgumentError, type ToolCall } from "@loopguard/core";
import { gateMemory, sha256 } from "@loopguard/core/plugin";
import { normalizeValue } from "./normalize-value.js";
import { describeValue } from "./predicate.js";

/**
 * Settings of the RunGuard's no-progress detection (`runGuard({ noProgress })`). Each signal is
 * a count; `false` turns it off. The defaults were chosen by measurement: see the package
 * README ("No progress") and `bench/no-progress-thresholds.mjs`.
 */
export interface NoProgressOptions {
  /**
   * Calls in a row to one tool whose arguments are equal once strings are compared normalised
   * (case, whitespace, compatibility forms) and numbers within `numberTolerance` of the call
   * before. It fires on a call that differs from the one before (an exact repeat is the loop
   * detector's to judge). Default 4.
   */
  nearRepeats?: number | false;
  /** How far apart two numbers may be and still count as the same, relative to the larger. Default 0.01. */
  numberTolerance?: number;
  /**
   * And less than this far apart in absolute terms (exclusive). Default 1, so whole numbers
   * that differ (page 2 after page 1, a timestamp a day on, offset 10,050 after 10,000) are
   * progress while 89.99 then 90.00 is not.
   */
  numberGap?: number;
  /** Times in a row one tool returned the same result before it is called again. Default 4. */
  sameResults?: number | false;
  /** Full A-B cycles in a row of two calls alternating (arguments compared as for near repeats). Default 3. */
  oscillations?: number | false;
  /**
   * Refusals in a row with no admitted call between them. Default 5. At twice this many the
   * run halts whatever step refused them (refusals before step 2.3 never reach the check).
   */
  refusalStreak?: number | false;
}

/** The settings in force, defaults filled in. */
export interface NoProgressSettings {
  nearRepeats: number | false;
  numberTolerance: number;
  numberGap: number;
  sameResults: number | false;
  oscillations: number | false;
  refusalStreak: number | false;
}

/** Measured defaults (README, "No progress"). */
export const noProgressDefaults: Readonly<NoProgressSettings> = Object.freeze({
  nearRepeats: 4,
  numberTolerance: 0.01,
  numberGap: 1,
  sameResults: 4,
  oscillations: 3,
  refusalStreak: 5,
});

/** Which signal fired. */
export type NoProgressSignal = "near_repeat" | "same_result" | "oscillation" | "refusal_streak";

/** Validates `noProgress` and fills in the defaults; `false`/`undefined` is off. */
export function resolveNoProgress(
  value: boolean | NoProgressOptions | undefined,
): Readonly<NoProgressSettings> | false {
  if (value === undefined || value === false) return false;
  if (value === true) return noProgressDefaults;
  if (value === null || typeof value !== "object")
    throw new InvalidArgumentError(
      `[policy] runGuard({ noProgress }): noProgress must be true, false or an object such as { nearRepeats: 4 }, got ${describeValue(value)}`,
    );
  const count = (name: keyof NoProgressOptions, min: number): number | false => {
    const given = value[name];
    if (given === undefined) return noProgressDefaults[name] as number | false;
    if (given === false) return false;
    if (!Number.isInteger(given) || (given as number) < min || (given as number) > 100)
      throw new InvalidArgumentError(
        `[policy] runGuard({ noProgress: { ${name} } }): ${name} must be false or an integer from ${min} to 100 (default ${noProgressDefaults[name]}), got ${describeValue(given)}`,
      );
    return given as number;
  };
  const tolerance = value.numberTolerance ?? noProgressDefaults.numberTolerance;
  if (
    typeof tolerance !== "number" ||
    !Number.isFinite(tolerance) ||
    tolerance < 0 ||
    tolerance > 0.5
  )
    throw new InvalidArgumentError(
      `[policy] runGuard({ noProgress: { numberTolerance } }): numberTolerance must be a number from 0 to 0.5 (default 0.01), got ${describeValue(tolerance)}`,
    );
  const gap = value.numberGap ?? noProgressDefaults.numberGap;
  if (typeof gap !== "number" || Number.isNaN(gap) || gap <= 0)
    throw new InvalidArgumentError(
      `[policy] runGuard({ noProgress: { numberGap } }): numberGap must be a positive number (Infinity for no cap; default 1), got ${describeValue(gap)}`,
    );
  for (const key of Object.keys(value))
    if (!(key in noProgressDefaults))
      throw new InvalidArgumentError(
        `[policy] runGuard({ noProgress }): unknown setting "${key}"; use ${Object.keys(noProgressDefaults).join(", ")}`,
      );
  return Object.freeze({
    nearRepeats: count("nearRepeats", 2),
    numberTolerance: tolerance,
    numberGap: gap,
    sameResults: count("sameResults", 2),
    oscillations: count("oscillations", 2),
    refusalStreak: count("refusalStreak", 2),
  });
}

/** A call reduced for near comparison: its tool and argument skeleton, and its numbers. */
interface NearKey {
  /** Tool and arguments with strings normalised and every number replaced by `#`. */
  shape: string;
  numbers: number[];
  /** The arguments exactly (strings as given), to tell a near repeat from an exact one. */
  raw: string;
}

/** Builds the near key of a call's arguments (strings normalised, numbers kept apart). */
export function nearKeyOf(tool: string, args: unknown): NearKey {
  const numbers: number[] = [];
  let shape = `${tool}\u0000`;
  let raw = "";
  const visit = (value: unknown, depth: number) => {
    if (depth > 16) {
      shape += "…";
      return;
    }
    if (typeof value === "number") {
      numbers.push(value);
      shape += "#";
    } else if (typeof value === "string") {
      shape += JSON.stringify(normalizeValue(value));
      raw += `${value.length}:${value}`;
    } else if (Array.isArray(value)) {
      shape += "[";
      for (const item of value) {
        visit(item, depth + 1);
        shape += ",";
      }
      shape += "]";
    } else if (value !== null && typeof value === "object") {
      shape += "{";
      for (const key of Object.keys(value).sort()) {
        shape += `${JSON.stringify(key)}:`;
        visit((value as Record<string, unknown>)[key], depth + 1);
        shape += ",";
      }
      shape += "}";
    } else {
      shape += String(value);
    }
  };
  visit(args, 0);
  return { shape, numbers, raw };
}

function same(a: NearKey, b: NearKey): boolean {
  if (a.shape !== b.shape || a.raw !== b.raw) return false;
  for (let index = 0; index < a.numbers.length; index += 1)
    if (!Object.is(a.numbers[index], b.numbers[index])) return false;
  return true;
}

function near(
  a: NearKey | undefined,
  b: NearKey | undefined,
  tolerance: number,
  gap: number,
): boolean {
  if (!a || !b || a.shape !== b.shape) return false;
  for (let index = 0; index < a.numbers.length; index += 1) {
    const x = a.numbers[index]!;
    const y = b.numbers[index]!;
    if (x === y) continue;
    if (!Number.isFinite(x) || !Number.isFinite(y)) return false;
    const apart = Math.abs(x - y);
    if (apart >= gap || apart > tolerance * Math.max(Math.abs(x), Math.abs(y))) return false;
  }
  return true;
}

/** The digest of what a tool returned, without the envelope's per-call id. */
function resultDigest(text: string): string {
  const end = text.indexOf("\n");
  const head = end < 0 ? text : text.slice(0, end);
  const stable = head.startsWith("<") ? head.replace(/ call="[^"]*"/, "") : head;
  return sha256(end < 0 ? stable : stable + text.slice(end));
}

/** Refusals that are the RunGuard's own, or a park: they do not feed the refusal streak. */
export const ownReasons: ReadonlySet<string> = new Set([
  "loop_detected",
  "no_progress",
  "run_halted",
  "awaiting_approval",
  "run_guard_outside_run",
]);

/** The run as a gate sees it (whatever core hands gates in `call.run`). */
type GateRun = NonNullable<ToolCall["run"]>;

/** Per-run no-progress state, in the gate's run memory; everything but asks is rebuilt from the run. */
interface State {
  callsSeen: number;
  outputsSeen: number;
  refusalsSeen: number;
  /** Near keys the check computed, by tool use id, until the call is folded in. */
  pending: Map<string, NearKey>;
  /** The last two admitted calls' near keys (undefined when not known, e.g. after a resume). */
  last: NearKey | undefined;
  beforeLast: NearKey | undefined;
  /** Near repeats in a row ending at the last admitted call (1 = just itself). */
  nearStreak: number;
  /** Admitted calls in a row that alternate between two near keys (A, B, A', B', ...). */
  alternating: number;
  /** Per tool: its last result digest and how many times in a row it came back. */
  results: Map<string, { digest: string; times: number }>;
  /** Refusals (not the guard's own) since the last admitted call. */
  refusalStreak: number;
  /** Warnings given (`no_progress` refusals in the run). */
  warnings: number;
  /** Calls sent to a person for `no_progress`, by tool use id. */
  asked: Set<string>;
}

/** A detection: which signal, and how strong. */
export interface NoProgressFinding {
  signal: NoProgressSignal;
  count: number;
  /** What it means for the model, one sentence. */
  what: string;
}

/** The no-progress detector of one RunGuard. */
export interface NoProgressDetector {
  readonly settings: Readonly<NoProgressSettings>;
  /** Finds a no-progress signal for `call` (the run's state folded in first). */
  detect(call: ToolCall, run: GateRun): NoProgressFinding | undefined;
  /** The run's state: warnings so far and the asks made. */
  stage(run: GateRun, call: ToolCall): "warn" | "ask" | "halt";
  /** Whether `decision` (about to be recorded) makes a refusal streak long enough to halt. */
  haltsStreak(run: GateRun): boolean;
}

/** Builds the detector for the given settings. */
export function noProgressDetector(settings: Readonly<NoProgressSettings>): NoProgressDetector {
  const tolerance = settings.numberTolerance;
  const gap = settings.numberGap;
  const watchesCalls = settings.nearRepeats !== false || settings.oscillations !== false;
  const memoryKey = gateMemory("run_guard.no_progress", () => ({
    state: undefined as State | undefined,
  }));
  const stateOf = (run: GateRun): State => {
    const box = run.memory(memoryKey);
    let state = box.state;
    if (
      !state ||
      state.callsSeen > run.calls.length ||
      state.outputsSeen > run.outputs.length ||
      state.refusalsSeen > run.refusals.length
    ) {
      state = {
        callsSeen: 0,
        outputsSeen: 0,
        refusalsSeen: 0,
        pending: new Map(),
        last: undefined,
        beforeLast: undefined,
        nearStreak: 0,
        alternating: 0,
        results: new Map(),
        refusalStreak: 0,
        warnings: 0,
        asked: state?.asked ?? new Set(),
      };
      box.state = state;
    }
    if (state.callsSeen < run.calls.length) {
      // An admitted call ends a refusal streak. Between two checks of a sequential run only
      // one of calls and refusals grows, so the order is known; with parallel calls the
      // refusals of the same turn are counted after the admitted ones.
      state.refusalStreak = 0;
      for (; state.callsSeen < run.calls.length; state.callsSeen += 1) {
        const call = run.calls[state.callsSeen]!;
        // The key the check computed; after a resume, the logged arguments (with a vault they
        // are tokens, so the first comparison across the resume may not match).
        let key = state.pending.get(call.toolUseId);
        state.pending.delete(call.toolUseId);
        const logged = (call as { args?: unknown }).args;
        if (key === undefined && logged !== undefined && watchesCalls)
          key = nearKeyOf(call.tool, logged);
        state.nearStreak = near(key, state.last, tolerance, gap) ? state.nearStreak + 1 : 1;
        // A-B-A-B: this call is near the one two back and not near the one before.
        state.alternating =
          near(key, state.beforeLast, tolerance, gap) && !near(key, state.last, tolerance, gap)
            ? Math.max(state.alternating, 2) + 1
            : 1;
        state.beforeLast = state.last;
        state.last = key;
      }
      if (state.pending.size > 64) state.pending.clear();
    }
    if (settings.sameResults !== false) {
      for (; state.outputsSeen < run.outputs.length; state.outputsSeen += 1) {
        const output = run.outputs[state.outputsSeen]!;
        const digest = resultDigest(output.text);
        const previous = state.results.get(output.tool);
        if (previous && previous.digest === digest) previous.times += 1;
        else state.results.set(output.tool, { digest, times: 1 });
      }
    }
    for (; state.refusalsSeen < run.refusals.length; state.refusalsSeen += 1) {
      const reason = run.refusals[state.refusalsSeen]!.reason;
      if (reason === "no_progress") state.warnings += 1;
      if (!ownReasons.has(reason)) state.refusalStreak += 1;
    }
    return state;
  };

  return {
    settings,
    detect(call, run) {
      const state = stateOf(run);
      const key =
        settings.nearRepeats !== false || settings.oscillations !== false
          ? nearKeyOf(call.tool, call.args)
          : undefined;
      if (key) {
        // Calls refused after this check never join run.calls: keep the map bounded.
        if (state.pending.size >= 256) state.pending.delete(state.pending.keys().next().value!);
        state.pending.set(call.toolUseId, key);
      }
      // An exact repeat is the loop detector's to judge; a near repeat differs from the call before.
      if (
        settings.nearRepeats !== false &&
        near(key, state.last, tolerance, gap) &&
        !same(key!, state.last!)
      ) {
        const count = state.nearStreak + 1;
        if (count >= settings.nearRepeats)
          return {
            signal: "near_repeat",
            count,
            what: `${call.tool} was called ${count} times in a row with arguments that differ only in case, spacing or small amounts`,
          };
      }
      if (
        settings.oscillations !== false &&
        near(key, state.beforeLast, tolerance, gap) &&
        !near(key, state.last, tolerance, gap)
      ) {
        const calls = Math.max(state.alternating, 2) + 1;
        const cycles = Math.floor(calls / 2);
        if (cycles >= settings.oscillations)
          return {
            signal: "oscillation",
            count: cycles,
            what: `the run has gone back and forth between the same two calls ${cycles} times`,
          };
      }
      if (settings.sameResults !== false) {
        const result = state.results.get(call.tool);
        if (result && result.times >= settings.sameResults)
          return {
            signal: "same_result",
            count: result.times,
            what: `${call.tool} returned the same result the last ${result.times} times it was called`,
          };
      }
      if (settings.refusalStreak !== false && state.refusalStreak >= settings.refusalStreak)
        return {
          signal: "refusal_streak",
          count: state.refusalStreak,
          what: `the last ${state.refusalStreak} tool calls of this run were refused`,
        };
      return undefined;
    },
    stage(run, call) {
      const state = stateOf(run);
      if (state.asked.has(call.toolUseId)) return "ask";
      const level = state.warnings + state.asked.size;
      if (level === 0) return "warn";
      if (level === 1) {
        if (state.asked.size >= 256) state.asked.clear();
        state.asked.add(call.toolUseId);
        return "ask";
      }
      return "halt";
    },
    haltsStreak(run) {
      if (settings.refusalStreak === false) return false;
      // The refusal being recorded is not in run.refusals yet: it is the +1.
      return stateOf(run).refusalStreak + 1 >= 2 * settings.refusalStreak;
    },
  };
}
