import type { ApprovalOutcome } from "./approval.js";
import type { CircuitBreaker } from "./circuit-breaker.js";
import type {
  AskDecision,
  DenyDecision,
  Gate,
  GateDecision,
  GateStep,
  ToolCall,
} from "./contracts/gate.js";
import type { DecisionRecord } from "./events.js";
import type { Tool } from "./tool.js";

/** The order of pipeline steps (DESIGN.md). */
const stepOrder: readonly GateStep[] = [
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

/** Refusal reasons that halt the run even without a RunGuard. */
export const defaultHaltOn: readonly string[] = Object.freeze([
  "kill_switch",
  "policy_indeterminate",
]);

/** A gate that can also decide whether a refusal halts the run (the RunGuard does). */
export interface HaltingGate extends Gate {
  haltOnRefusal?(call: ToolCall, decision: DenyDecision): boolean;
}

/** Sorts gates by step, keeping the given order within a step. */
export function sortGates(gates: readonly Gate[]): Gate[] {
  return gates
    .map((gate, index) => ({ gate, index, rank: stepOrder.indexOf(gate.step) }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map((entry) => entry.gate);
}

/** What the pipeline needs to judge one call. */
export interface JudgeInput {
  call: ToolCall;
  /** The tool, or `undefined` when the model named one that does not exist. */
  tool: Tool | undefined;
  /** User gates, sorted by step. */
  gates: readonly Gate[];
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
  const { call, tool } = input;
  const passed: string[] = [];
  const asks: AskDecision[] = [];
  let breakerAcquired = false;

  const refuse = (
    at: string,
    decision: DenyDecision,
    gate?: Gate,
    approval?: ApprovalOutcome,
  ): Judgement => {
    if (breakerAcquired) input.breaker?.release();
    const halts = shouldHalt(input, decision);
    const record: DecisionRecord = {
      outcome: "deny",
      passed: [...passed],
      refusedAt: at,
      reason: decision.reason,
      message: decision.message,
      ...(decision.fixHints ? { fixHints: decision.fixHints } : {}),
      ...(gate ? { gate: gate.name } : {}),
      ...(decision.details ? { details: decision.details } : {}),
    };
    if (halts && call.run && !call.run.halted) {
      call.run.halt(decision.reason, at);
      record.halted = true;
    }
    return approval ? { type: "deny", record, approval } : { type: "deny", record };
  };

  const haltedCheck = (): DenyDecision | undefined =>
    call.run?.halted
      ? {
          type: "deny",
          reason: "run_halted",
          message: `This run was halted (${call.run.haltReason}); no further tool calls are allowed.`,
          fixHints: ["Stop calling tools and tell the user the run was halted and why."],
        }
      : undefined;

  const userGates = [...input.gates];
  // Whether a user gate of this step or an earlier one is still to run: most calls meet no gate
  // at most steps, and skipping the await there saves a promise and a turn of the event loop.
  const due = (upTo: GateStep): boolean =>
    userGates.length > 0 && stepOrder.indexOf(userGates[0]!.step) <= stepOrder.indexOf(upTo);
  const runGates = async (upTo: GateStep): Promise<Judgement | undefined> => {
    while (
      userGates.length > 0 &&
      stepOrder.indexOf(userGates[0]!.step) <= stepOrder.indexOf(upTo)
    ) {
      const gate = userGates.shift()!;
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
        input.onError(error, `gate ${gate.name}`);
        return refuse(
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
      if (decision.type === "deny") return refuse(at, decision, gate);
      if (decision.type === "ask") asks.push(decision);
      passed.push(at);
    }
    return undefined;
  };

  // Step 0: the kill switch and any other step-0 gate.
  let early = due("0") ? await runGates("0") : undefined;
  if (early) return early;
  // Step 0.7: the halt latch.
  const halted = haltedCheck();
  if (halted) return refuse("0.7:run_halted", halted);
  passed.push("0.7:run_halted");
  // Step 1: validation.
  if (!tool) {
    return refuse("1:validation", {
      type: "deny",
      reason: "unknown_tool",
      message: `There is no tool named "${call.tool}".`,
      fixHints: ["Call one of the tools listed in your tool definitions."],
    });
  }
  const parsed = tool.parse(call.args);
  if (!parsed.ok) {
    return refuse("1:validation", {
      type: "deny",
      reason: "invalid_arguments",
      message: `The arguments do not match the ${tool.name} schema: ${parsed.issues.join("; ")}.`,
      fixHints: [
        "Fix the arguments named above and call the tool again, using only the keys its schema declares.",
      ],
    });
  }
  call.args = parsed.value as Record<string, unknown>;
  passed.push("1:validation");
  // Steps 2 to 2.5: policy, rate limits, loop detection, taint (user gates).
  early = due("2.5") ? await runGates("2.5") : undefined;
  if (early) return early;
  // Step 3: approval.
  let approval: ApprovalOutcome | undefined;
  early = due("3") ? await runGates("3") : undefined;
  if (early) return early;
  if (asks.length > 0) {
    const ask = asks[0]!;
    approval = await input.approve(ask, passed);
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
      return refuse(
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
      const messages: Record<typeof approval.why, string> = {
        denied: "A person reviewed this call and denied it.",
        timeout: "No approval arrived in time, so the call was refused.",
        no_approver: "This call needs a person's approval and no approver is configured.",
        expired: "The approval for this call expired before it was used.",
        stale: "The approval no longer matches the call or the policy, so it was not used.",
      };
      return refuse(
        "3:approval",
        {
          type: "deny",
          reason: approval.why === "denied" ? "approval_denied" : `approval_${approval.why}`,
          message: messages[approval.why] + (approval.note ? ` Note: ${approval.note}` : ""),
          fixHints: ["Do not retry this call; tell the user it was not approved."],
        },
        undefined,
        approval,
      );
    }
    passed.push("3:approval");
  } else {
    passed.push("3:approval");
  }
  // Step 4: the tool's circuit breaker.
  early = due("4") ? await runGates("4") : undefined;
  if (early) return early;
  if (input.breaker) {
    if (!input.breaker.tryAcquire()) {
      return refuse("4:circuit_breaker", {
        type: "deny",
        reason: "circuit_open",
        message: `The ${tool.name} tool is failing repeatedly and is paused for ${Math.ceil(input.breaker.retryInMs / 1000)} s.`,
        fixHints: [
          "Do not call this tool again now; continue without it or tell the user it is unavailable.",
        ],
      });
    }
    breakerAcquired = true;
  }
  passed.push("4:circuit_breaker");
  // Step 5: the budget.
  early = due("5") ? await runGates("5") : undefined;
  if (early) return early;
  const overBudget = input.budget?.();
  if (overBudget) return refuse("5:budget", overBudget);
  passed.push("5:budget");
  // Step 0.7 again: the run may have halted while this call waited.
  const haltedLate = haltedCheck();
  if (haltedLate) return refuse("0.7:run_halted", haltedLate);
  passed.push("0.7:run_halted");
  const record: DecisionRecord = { outcome: "allow", passed };
  return approval
    ? { type: "allow", record, args: call.args, approval }
    : { type: "allow", record, args: call.args };
}

function shouldHalt(input: JudgeInput, decision: DenyDecision): boolean {
  if (decision.reason === "run_halted") return false;
  if (decision.halt === true || input.haltOn.includes(decision.reason)) return true;
  for (const gate of input.gates as readonly HaltingGate[]) {
    try {
      if (gate.haltOnRefusal?.(input.call, decision)) return true;
    } catch (error) {
      input.onError(error, `gate ${gate.name} haltOnRefusal`);
      return true;
    }
  }
  return false;
}
