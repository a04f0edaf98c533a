import {
  type CallOutcome,
  type Gate,
  isShadowGate,
  type ShadowGate,
  type ToolCall,
} from "./contracts/gate.js";
import type { HaltingGate } from "./pipeline.js";
import { RunState } from "./run-state.js";

/** Wrappers already made, so a gate shared by many trees is wrapped once per level. */
const wrapped = new WeakMap<Gate, Gate>();

/** The call as the parent run sees it: the same call, judged with the parent's view of its tree. */
function asParentSees(call: ToolCall): ToolCall {
  const run = call.run;
  const parent = run instanceof RunState ? run.treeParent : undefined;
  return parent ? { ...call, run: parent } : call;
}

/**
 * A parent's gate as it judges a child's calls: with the parent's run state (its run id, its
 * own calls and outputs and every descendant's so far, siblings included) instead of the
 * child's, so a freeze of the parent's run stops its children's calls and a counter per run
 * (rate, loop repeats, a cap on refunds) counts the whole tree below the parent. Wrapped once
 * per level: a grandparent's gate, wrapped by its child's loop and again by its grandchild's,
 * judges with the grandparent's state. A child with no parent state in this process (none
 * linked) is judged with its own view.
 */
export function ancestorGate(gate: Gate): Gate {
  const known = wrapped.get(gate);
  if (known) return known;
  const halting = gate as HaltingGate;
  const result: HaltingGate & { mode?: ShadowGate["mode"]; judge?: ShadowGate["judge"] } = {
    name: gate.name,
    step: gate.step,
    check: (call) => gate.check(asParentSees(call)),
  };
  if (gate.digest) result.digest = () => gate.digest!();
  if (gate.observe)
    result.observe = (outcome: CallOutcome) =>
      gate.observe!({ ...outcome, call: asParentSees(outcome.call) });
  if (halting.haltOnRefusal)
    result.haltOnRefusal = (call, decision) => halting.haltOnRefusal!(asParentSees(call), decision);
  if (isShadowGate(gate)) {
    result.mode = "shadow";
    result.judge = (call) => gate.judge(asParentSees(call));
  }
  wrapped.set(gate, result);
  return result;
}
