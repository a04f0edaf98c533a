import {
  type CallOutcome,
  type Gate,
  type GateDecision,
  InvalidArgumentError,
  type ToolCall,
} from "@loopguard/core";
import { sha256 } from "@loopguard/core/plugin";
import { describeValue } from "./predicate.js";

/** Options of `shadow()`. */
export interface ShadowOptions {
  /** The name recorded in `shadow-decision` events. Default `shadow:<gate name>`. */
  name?: string;
}

/**
 * A candidate gate run in shadow mode: core judges every call with it beside the enforcing
 * pipeline and records a `shadow-decision` event wherever it would have decided differently.
 * It never refuses: its `check` always allows (so even a core that knows nothing of shadows
 * cannot enforce it), and core calls `judge` for the candidate's verdict.
 */
export interface ShadowGate extends Gate {
  readonly mode: "shadow";
  /** The candidate gate. */
  readonly gate: Gate;
  /** Always `allow`: a shadow never refuses. */
  check(call: ToolCall): GateDecision;
  /** The candidate's decision for the call (may throw: core records the error and goes on). */
  judge(call: ToolCall): GateDecision | Promise<GateDecision>;
}

const allowDecision = Object.freeze({ type: "allow" as const });

/**
 * Wraps a candidate gate (a stricter policy, a new rate limit, a RunGuard with no-progress
 * detection) so it judges live traffic without enforcing: put it in `gates` beside the
 * enforcing ones. Core records a `shadow-decision` event for each call where the candidate
 * would have decided differently (deny where the call ran, ask where nobody was asked, allow
 * where the same step refused), and a throwing candidate is recorded as an error, never a
 * refusal. Spans and `loopguard runs` show the count. The candidate keeps its own state (rate
 * limit buckets in its own memory), never the live gates'.
 *
 * @example
 * const candidate = loadPolicy(await readFile("candidate.json", "utf8"));
 * createAgent({ model, tools, gates: [...live.gates, ...candidate.gates.map((gate) => shadow(gate))] });
 */
export function shadow(gate: Gate, options: ShadowOptions = {}): ShadowGate {
  if (
    gate === null ||
    typeof gate !== "object" ||
    typeof gate.check !== "function" ||
    typeof gate.name !== "string"
  )
    throw new InvalidArgumentError(
      `[policy] shadow(gate): gate must be a gate such as policy([...]) or runGuard(), got ${describeValue(gate)}`,
    );
  if ((gate as Partial<ShadowGate>).mode === "shadow")
    throw new InvalidArgumentError(
      `[policy] shadow(gate): ${gate.name} is already a shadow; pass the candidate gate itself`,
    );
  const name = options.name ?? `shadow:${gate.name}`;
  if (typeof name !== "string" || name.trim() === "")
    throw new InvalidArgumentError(
      `[policy] shadow(gate, { name }): name must be a non-empty string, got ${describeValue(name)}`,
    );
  const observe = gate.observe?.bind(gate);
  const wrapped: ShadowGate = {
    name,
    step: gate.step,
    mode: "shadow",
    gate,
    digest: () => sha256(`shadow:${gate.digest?.() ?? gate.name}`),
    check: () => allowDecision,
    judge: (call) => gate.check(call),
    ...(observe ? { observe: (outcome: CallOutcome) => observe(outcome) } : {}),
  };
  return Object.freeze(wrapped);
}
