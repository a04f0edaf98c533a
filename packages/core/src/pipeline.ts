import type { ApprovalOutcome } from "./approval.js";
import type { CircuitBreaker } from "./circuit-breaker.js";
import {
  type AskDecision,
  type DenyDecision,
  type Gate,
  type GateDecision,
  type GateStep,
  isShadowGate,
  type ToolCall,
} from "./contracts/gate.js";
import { digestOf } from "./digest.js";
import { InvalidArgumentError } from "./errors.js";
import type { DecisionRecord } from "./events.js";
import type { JsonValue } from "./json.js";
import { RunState } from "./run-state.js";
import type { Tool } from "./tool.js";

/** The order of pipeline steps (docs/architecture.md); also the steps a gate may declare. */
export const stepOrder: readonly GateStep[] = [
  "0",
  "0.7",
  "1",
  "2",
  "2.1",
  "2.3",
  "2.5",
  "3",
  "4",
  "5",
  "6",
  "7",
];

const stepRank = new Map<string | undefined, number>(stepOrder.map((step, index) => [step, index]));

/** Refusal reasons that halt the run even without a RunGuard. */
export const defaultHaltOn: readonly string[] = Object.freeze([
  "kill_switch",
  "policy_indeterminate",
]);

/**
 * A gate that can also decide whether a refusal halts the run (the RunGuard does): `true`
 * halts it for the refusal's reason, a string halts it for that reason (a streak of refusals
 * halting as `no_progress`).
 */
export interface HaltingGate extends Gate {
  haltOnRefusal?(call: ToolCall, decision: DenyDecision): boolean | string;
}

/**
 * Sorts gates by step, keeping the given order within a step. A gate whose step is not one of
 * {@link stepOrder} is refused here: the pipeline runs gates in step order, so a gate at an
 * unknown step would otherwise sort first and never come due, and every gate behind it with it.
 */
export function sortGates(gates: readonly Gate[]): Gate[] {
  return gates
    .map((gate, index) => {
      const rank = stepRank.get(gate?.step);
      if (rank === undefined) throw unknownStepError(gate, index);
      return { gate, index, rank };
    })
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map((entry) => entry.gate);
}

/** The error for a gate declared at a step the pipeline does not have. */
export function unknownStepError(gate: Gate | undefined, index: number): InvalidArgumentError {
  const name = typeof gate?.name === "string" ? `"${gate.name}"` : `#${index}`;
  return new InvalidArgumentError(
    `[core] gate ${name} (gates[${index}]) has step ${JSON.stringify(gate?.step)}, which is not a pipeline step: use one of ${stepOrder.map((step) => `"${step}"`).join(", ")} (a gate at an unknown step would never run)`,
  );
}

/**
 * The digest of a pipeline's settings: every enforcing gate's name, step and own digest, and
 * the reasons that halt. Recorded in `run-start` and bound into every approval.
 */
export function policyDigestOf(gates: readonly Gate[], haltOn: readonly string[]): string {
  return digestOf({
    // Shadow gates never decide, so adding one does not make pending approvals stale.
    gates: gates
      .filter((gate) => !isShadowGate(gate))
      .map((gate) => [gate.name, gate.step, gate.digest?.() ?? null]),
    haltOn,
  });
}

/** What the pipeline needs to judge one call. */
export interface JudgeInput {
  call: ToolCall;
  /** The tool, or `undefined` when the model named one that does not exist. */
  tool: Tool | undefined;
  /** User gates, sorted by step. */
  gates: readonly Gate[];
  /** The run whose halt latch a halting refusal sets. Default: `call.run` (the run state gates see read-only). */
  run?: RunState;
  /** Reasons that halt the run. */
  haltOn: readonly string[];
  /** Asks a person (or reads a recorded answer, or parks the run). */
  approve: (ask: AskDecision, passed: readonly string[]) => Promise<ApprovalOutcome>;
  /** Step 5: refuses a call the run cannot afford. */
  budget?: () => DenyDecision | undefined;
  /** Step 4: the tool's breaker. */
  breaker?: CircuitBreaker;
  onError: (error: unknown, where: string) => void;
}

/** What the pipeline decided. */
export type Judgement =
  | {
      type: "allow";
      record: DecisionRecord;
      args: Record<string, unknown>;
      approval?: ApprovalOutcome;
    }
  | { type: "deny"; record: DecisionRecord; approval?: ApprovalOutcome }
  | { type: "park"; record: DecisionRecord; ask: AskDecision };

/**
 * Runs one call through every step in order; the first step that refuses ends it. A gate that
 * throws is a deny (`gate_error`): gates fail closed. A refusal whose reason is in `haltOn`,
 * or that a gate says should halt, sets the run's halt latch.
 */
export async function judgeCall(input: JudgeInput): Promise<Judgement> {
  return new CallJudgement(input).judge();
}

/** The judging of one call: the steps passed so far, the asks met and the breaker slot held. */
class CallJudgement {
  readonly #input: JudgeInput;
  readonly #passed: string[] = [];
  readonly #asks: Array<AskDecision & { gate: string }> = [];
  /** User gates not run yet, in order. */
  readonly #gates: Gate[];
  #breakerAcquired = false;

  constructor(input: JudgeInput) {
    this.#input = input;
    // A shadow gate never enforces (its check allows anyway): callers that hand the pipeline
    // every gate, such as adapters, get no `passed` entry for it.
    this.#gates = input.gates.filter((gate) => !isShadowGate(gate));
  }

  async judge(): Promise<Judgement> {
    const { call, tool } = this.#input;
    const passed = this.#passed;
    // Step 0: the kill switch and any other step-0 gate.
    let early = this.#due("0") ? await this.#runGates("0") : undefined;
    if (early) return early;
    // Step 0.7: the halt latch.
    const halted = this.#haltedCheck();
    if (halted) return this.#refuse("0.7:run_halted", halted);
    passed.push("0.7:run_halted");
    // Step 1: validation.
    const invalid = validate(call, tool);
    if (invalid) return this.#refuse("1:validation", invalid);
    passed.push("1:validation");
    // Steps 2 to 2.5: policy, rate limits, loop detection, taint (user gates); then step 3.
    early = this.#due("3") ? await this.#runGates("3") : undefined;
    if (early) return early;
    const approved = await this.#approvalStep();
    if (approved.type !== "allow") return approved;
    const approval = approved.approval;
    // Step 4: the tool's circuit breaker.
    early = this.#due("4") ? await this.#runGates("4") : undefined;
    if (early) return early;
    const breaker = this.#input.breaker;
    if (breaker) {
      if (!breaker.tryAcquire()) {
        return this.#refuse("4:circuit_breaker", {
          type: "deny",
          reason: "circuit_open",
          message: `The ${tool!.name} tool is failing repeatedly and is paused for ${Math.ceil(breaker.retryInMs / 1000)} s.`,
          fixHints: [
            "Do not call this tool again now; continue without it or tell the user it is unavailable.",
          ],
        });
      }
      this.#breakerAcquired = true;
    }
    passed.push("4:circuit_breaker");
    // Step 5: the budget.
    early = this.#due("5") ? await this.#runGates("5") : undefined;
    if (early) return early;
    const overBudget = this.#input.budget?.();
    if (overBudget) return this.#refuse("5:budget", overBudget);
    passed.push("5:budget");
    // Step 0.7 again: the run may have halted while this call waited.
    const haltedLate = this.#haltedCheck();
    if (haltedLate) return this.#refuse("0.7:run_halted", haltedLate);
    passed.push("0.7:run_halted");
    const record: DecisionRecord = { outcome: "allow", passed };
    return approval
      ? { type: "allow", record, args: call.args, approval }
      : { type: "allow", record, args: call.args };
  }

  #refuse(at: string, decision: DenyDecision, gate?: Gate, approval?: ApprovalOutcome): Judgement {
    const input = this.#input;
    const call = input.call;
    if (this.#breakerAcquired) input.breaker?.release();
    const haltReason = shouldHalt(input, decision);
    const record: DecisionRecord = {
      outcome: "deny",
      passed: [...this.#passed],
      refusedAt: at,
      reason: decision.reason,
      message: decision.message,
      ...(decision.fixHints ? { fixHints: decision.fixHints } : {}),
      ...(gate ? { gate: gate.name } : {}),
      ...(decision.details ? { details: decision.details } : {}),
    };
    // Gates see the run read-only; the run the pipeline halts is the run state behind the view.
    const run = input.run ?? (call.run instanceof RunState ? call.run : undefined);
    if (haltReason !== undefined && run && !run.halted) {
      run.halt(haltReason, at);
      record.halted = true;
    }
    return approval ? { type: "deny", record, approval } : { type: "deny", record };
  }

  #haltedCheck(): DenyDecision | undefined {
    const run = this.#input.call.run;
    return run?.halted
      ? {
          type: "deny",
          reason: "run_halted",
          message: `This run was halted (${run.haltReason}); no further tool calls are allowed.`,
          fixHints: ["Stop calling tools and tell the user the run was halted and why."],
          details: { haltReason: run.haltReason ?? "halted" },
        }
      : undefined;
  }

  /**
   * Whether a user gate of this step or an earlier one is still to run: most calls meet no gate
   * at most steps, and skipping the await there saves a promise and a turn of the event loop.
   */
  #due(upTo: GateStep): boolean {
    const next = this.#gates[0];
    // A gate at a step the pipeline does not know (one that bypassed sortGates) is due at once:
    // it and the gates behind it are judged, never skipped.
    if (next === undefined) return false;
    const rank = stepRank.get(next.step);
    return rank === undefined || rank <= stepRank.get(upTo)!;
  }

  async #runGates(upTo: GateStep): Promise<Judgement | undefined> {
    const call = this.#input.call;
    while (this.#due(upTo)) {
      const gate = this.#gates.shift()!;
      const at = `${gate.step}:${gate.name}`;
      let decision: GateDecision;
      try {
        decision = await gate.check(call);
        if (
          !decision ||
          (decision.type !== "allow" && decision.type !== "deny" && decision.type !== "ask")
        ) {
          throw new TypeError(
            `gate returned ${JSON.stringify(decision)}; expected { type: "allow" | "deny" | "ask" }`,
          );
        }
      } catch (error) {
        this.#input.onError(error, `gate ${gate.name}`);
        return this.#refuse(
          at,
          {
            type: "deny",
            reason: "gate_error",
            message: `The ${gate.name} check failed, so the call was refused (gates fail closed).`,
            fixHints: ["Try a different approach, or ask the user for help."],
          },
          gate,
        );
      }
      if (decision.type === "deny") return this.#refuse(at, decision, gate);
      if (decision.type === "ask") this.#asks.push({ ...decision, gate: gate.name });
      this.#passed.push(at);
    }
    return undefined;
  }

  /**
   * Step 3: every `ask` of the call goes to the approver as one request that names them all
   * (a policy ask and a taint ask are one question with two reasons, never the first alone);
   * its answer admits, refuses or parks.
   */
  async #approvalStep(): Promise<Judgement | { type: "allow"; approval?: ApprovalOutcome }> {
    const passed = this.#passed;
    const ask = combineAsks(this.#asks);
    if (!ask) {
      passed.push("3:approval");
      return { type: "allow" };
    }
    const approval = await this.#input.approve(ask, passed);
    if (approval.type === "park") {
      return {
        type: "park",
        ask,
        record: {
          outcome: "deny",
          passed: [...passed],
          refusedAt: "3:approval",
          reason: "awaiting_approval",
          message: ask.message,
        },
      };
    }
    if (approval.type === "indeterminate") {
      return this.#refuse(
        "3:approval",
        {
          type: "deny",
          reason: "policy_indeterminate",
          message: `The approval answer could not be read (${approval.note}), so the call was refused.`,
          fixHints: ["Stop and tell the user that the approval could not be read."],
        },
        undefined,
        approval,
      );
    }
    if (approval.type === "deny") {
      return this.#refuse(
        "3:approval",
        {
          type: "deny",
          reason: approval.why === "denied" ? "approval_denied" : `approval_${approval.why}`,
          message: approvalDenials[approval.why] + (approval.note ? ` Note: ${approval.note}` : ""),
          fixHints: ["Do not retry this call; tell the user it was not approved."],
        },
        undefined,
        approval,
      );
    }
    passed.push("3:approval");
    return { type: "allow", approval };
  }
}

/** One ask naming every gate's ask of the call (their reasons, messages and details). */
function combineAsks(asks: ReadonlyArray<AskDecision & { gate: string }>): AskDecision | undefined {
  const first = asks[0];
  if (!first) return undefined;
  const reasons = asks.map((ask) => ({ reason: ask.reason, message: ask.message, gate: ask.gate }));
  if (asks.length === 1) {
    const { gate: _gate, ...only } = first;
    return { ...only, reasons };
  }
  const details: Record<string, JsonValue> = {};
  for (const ask of asks) if (ask.details) Object.assign(details, ask.details);
  return {
    type: "ask",
    reason: first.reason,
    message: asks.map((ask) => ask.message).join(" Also: "),
    ...(Object.keys(details).length > 0 ? { details } : {}),
    reasons,
  };
}

const approvalDenials: Record<Extract<ApprovalOutcome, { type: "deny" }>["why"], string> = {
  denied: "A person reviewed this call and denied it.",
  timeout: "No approval arrived in time, so the call was refused.",
  no_approver: "This call needs a person's approval and no approver is configured.",
  expired: "The approval for this call expired before it was used.",
  stale: "The approval no longer matches the call or the policy, so it was not used.",
};

/** Step 1: an unknown tool or arguments that fail its schema; parsed arguments replace the call's. */
function validate(call: ToolCall, tool: Tool | undefined): DenyDecision | undefined {
  if (!tool) {
    return {
      type: "deny",
      reason: "unknown_tool",
      message: `There is no tool named "${call.tool}".`,
      fixHints: ["Call one of the tools listed in your tool definitions."],
    };
  }
  const parsed = tool.parse(call.args);
  if (!parsed.ok) {
    return {
      type: "deny",
      reason: "invalid_arguments",
      message: `The arguments do not match the ${tool.name} schema: ${parsed.issues.join("; ")}.`,
      fixHints: [
        "Fix the arguments named above and call the tool again, using only the keys its schema declares.",
      ],
    };
  }
  call.args = parsed.value as Record<string, unknown>;
  return undefined;
}

/**
 * The reason the run halts for, when this refusal halts it: a gate's `halt` (with its
 * `haltReason`), `haltOn`, or a gate's `haltOnRefusal`. A `run_halted` refusal halts only when
 * its gate says so (the RunGuard refusing the loop after a warning); core's own halt-latch
 * refusals never halt again.
 */
function shouldHalt(input: JudgeInput, decision: DenyDecision): string | undefined {
  const own =
    typeof decision.haltReason === "string" && decision.haltReason !== ""
      ? decision.haltReason
      : decision.reason;
  if (decision.reason === "run_halted") return decision.halt === true ? own : undefined;
  if (decision.halt === true || input.haltOn.includes(decision.reason)) return own;
  for (const gate of input.gates as readonly HaltingGate[]) {
    try {
      const verdict = gate.haltOnRefusal?.(input.call, decision);
      if (verdict === true) return decision.reason;
      if (typeof verdict === "string" && verdict !== "") return verdict;
    } catch (error) {
      input.onError(error, `gate ${gate.name} haltOnRefusal`);
      return decision.reason;
    }
  }
  return undefined;
}
