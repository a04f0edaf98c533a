import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { Exporter } from "./contracts/exporter.js";
import type { DenyDecision } from "./contracts/gate.js";
import type { Redactor } from "./contracts/redactor.js";
import type { Vault } from "./contracts/vault.js";
import { InvalidArgumentError } from "./errors.js";
import type { ApprovalDecisionEvent, ApprovalRequestEvent, Budget } from "./events.js";
import { guardRunModel, RunFold } from "./fold.js";
import { foldLog } from "./fold-stream.js";
import type { JsonValue } from "./json.js";
import { memoryEventStore } from "./memory-event-store.js";
import { randomHex } from "./random-hex.js";
import type { RunContextInput, RunState } from "./run-state.js";
import { Telemetry } from "./run-telemetry.js";
import { RunWriter, type RunWriterOptions } from "./run-writer.js";
import { shortMessage } from "./short-message.js";
import type { Tool } from "./tool.js";

/** The budget of a guarded run: the loop's caps, plus a cap on admitted tool calls. */
export interface GuardBudget extends Budget {
  /** Admitted tool calls (refused ones do not count). */
  maxToolCalls?: number;
}

/**
 * What `withRun` takes besides who is running: where the run's log goes and what it may
 * spend. With any of `store`, `exporters`, `onEvent`, `budget`, `vault` or durable approvals,
 * guarded calls append the same events the loop does (`tool-call-intent`, `-refusal`,
 * `-result`, approvals, `run-halt`, `run-end`) to a log of their own.
 */
export interface RunLogOptions {
  /** Where the events go; without one (but with another option here) an in-memory store. */
  store?: EventStore;
  /** Span exporters: an `invoke_agent` root span with an `execute_tool` child per call. */
  exporters?: readonly Exporter[];
  /** Applied to every event handed to `onEvent` and every exported span (never to the log). */
  redact?: Redactor;
  /** Called with each event once it is durable; must not throw (errors go to `onError`). */
  onEvent?: (event: StoredEvent) => void;
  /** Caps checked at step 5 of every guarded call; a call past one is refused as `budget_exceeded`. */
  budget?: GuardBudget;
  /** Tokenises personal data in what the log records; tools and gates see real values. */
  vault?: Vault;
  approval?: {
    /**
     * Park asks instead of asking the guard's approver inline: the call is refused as
     * `approval_pending` with the request id, the run waits (`awaiting_approval`), and once a
     * person answers (`agent.approve`, `approveRun` or `loopguard approve`), the identical call
     * (same run, tool and argument digest) is admitted once.
     */
    durable?: boolean;
  };
  /** Telemetry and `onEvent` failures (they never reach the run). */
  onError?: (error: unknown, where: string) => void;
  /** The clock, for tests. */
  now?: () => number;
}

/** What `withRun` takes: who is running, and optionally where its log goes. */
export type WithRunContext = RunContextInput & RunLogOptions;

/** The log of one guarded run, as guarded calls use it. */
export interface GuardRunLog {
  readonly writer: RunWriter;
  readonly durable: boolean;
  readonly vault: Vault | undefined;
  readonly now: () => number;
  /** Step 5 for a guarded call. */
  budget(tool: Tool<any, any> | undefined): DenyDecision | undefined;
  /** An unused approval of the identical call (same tool and argument digest), newest first. */
  approvalOf(
    tool: string,
    argsDigest: string,
  ): { request: ApprovalRequestEvent; decision?: ApprovalDecisionEvent } | undefined;
  /**
   * While an approval is open, reads what others appended since (a person's answer, written
   * by `approveRun`, `agent.approve` or the CLI from another process) into this run.
   */
  sync(): Promise<void>;
  /**
   * Ends the run (unless an approval is open, which leaves it `awaiting_approval`). With
   * `stop`, it ends `stopped` with `stop.why` whatever is open: each unanswered approval
   * request is first recorded as `withdrawn`.
   */
  finish(error?: unknown, stop?: { why: string; message?: string }): Promise<void>;
}

const logKeys = [
  "store",
  "exporters",
  "redact",
  "onEvent",
  "budget",
  "vault",
  "approval",
] as const satisfies readonly (keyof RunLogOptions)[];

/** Whether `withRun` was asked to keep a log. */
export function wantsLog(context: WithRunContext): boolean {
  return logKeys.some((key) => context[key] !== undefined);
}

/**
 * Opens the log of a guarded run: a new run gets its `run-start`; a run already in the store
 * (the same `runId`, after an approval was answered) is folded back and gets a `run-resume`.
 */
export async function openGuardRun(
  context: WithRunContext,
): Promise<{ state: RunState; log: GuardRunLog }> {
  const now = context.now ?? Date.now;
  const reportError = (error: unknown, where: string) => {
    try {
      context.onError?.(error, where);
    } catch {
      // nowhere left to report
    }
  };
  const store = context.store ?? memoryEventStore();
  const runId = context.runId ?? `run_${randomHex(8)}`;
  const vault = context.vault;
  const telemetry = new Telemetry({
    exporters: context.exporters ?? [],
    redact: context.redact,
    onEvent: context.onEvent,
    reportError,
  });
  const forRun = telemetry.forRun(runId);
  const options: RunWriterOptions = {
    now,
    ...(vault ? { reveal: (text: string) => vault.reveal(text) } : {}),
    onApplied: forRun.onApplied,
  };
  // A long log (a guarded session resumed after an approval) is streamed and folded in slices
  // that yield, as the loop's resume does.
  const where = `run ${runId} (${store.name} store)`;
  const replay = forRun.spans;
  const folded = await foldLog(
    store,
    runId,
    where,
    vault ? { reveal: options.reveal! } : {},
    replay ? (event, fold) => replay.push(event, fold.messages) : undefined,
  );
  let writer: RunWriter;
  if (!folded) {
    writer = new RunWriter(store, runId, 0, options);
    const roles = context.roles ? [...context.roles] : [];
    await writer.write({
      type: "run-start",
      runId,
      agentId: context.agentId ?? "agent",
      task: vault && context.task ? vault.tokenize(context.task) : (context.task ?? ""),
      model: guardRunModel,
      maxTokens: 0,
      budget: { ...(context.budget ?? {}) },
      policyDigest: "",
      toolDigest: "",
      context: { roles, ...(context.attributes ?? {}) } as Record<string, JsonValue>,
    });
  } else {
    const fold = folded.fold;
    if (fold.start.model !== guardRunModel)
      throw new InvalidArgumentError(
        `[core] withRun: run ${runId} in the ${store.name} store is a loop run (model ${fold.start.model}); continue it with agent.resume("${runId}"), or omit runId to start a guarded run`,
      );
    if (fold.end)
      throw new InvalidArgumentError(
        `[core] withRun: run ${runId} already ended (${fold.end.status}); omit runId to start a new run`,
      );
    writer = new RunWriter(store, runId, folded.events, options, fold);
    await writer.write({ type: "run-resume", fromSeq: folded.events });
  }
  const fold = writer.fold;
  const state = fold.state;
  const unlisten = state.onHalt((reason, source) => {
    writer.write({ type: "run-halt", reason, source }).catch(() => undefined);
  });
  const budget = fold.start.budget as GuardBudget;
  const log: GuardRunLog = {
    writer,
    durable: context.approval?.durable === true,
    vault,
    now,
    budget: (tool) => budgetDecision(budget, state, tool, fold.activeMs(now())),
    approvalOf(tool, argsDigest) {
      const approvals = fold.pendingTurn?.approvals;
      if (!approvals) return undefined;
      let found: { request: ApprovalRequestEvent; decision?: ApprovalDecisionEvent } | undefined;
      for (const entry of approvals.values())
        if (
          entry.request.tool === tool &&
          entry.request.argsDigest === argsDigest &&
          !fold.usedApprovals.has(entry.request.requestId)
        )
          found = entry;
      return found;
    },
    async sync() {
      if (!fold.awaitingApproval || writer.broken) return;
      const stored = await store.read(runId);
      for (let seq = fold.nextSeq; seq < stored.length; seq += 1) {
        fold.apply(stored[seq]!);
        forRun.onApplied(stored[seq]!, fold);
      }
      writer.nextSeq = fold.nextSeq;
    },
    async finish(error, stop) {
      unlisten();
      try {
        if (stop && !fold.end && !writer.broken) {
          const turn = fold.pendingTurn;
          for (const entry of turn ? [...turn.approvals.values()] : [])
            if (!entry.decision && !turn!.results.has(entry.request.toolUseId))
              await writer.write({
                type: "approval-decision",
                requestId: entry.request.requestId,
                toolUseId: entry.request.toolUseId,
                decision: "withdrawn",
                note: `the run ended (${stop.why}) before anyone answered`,
              });
          await writer.write({
            type: "run-end",
            status: "stopped",
            answer: "",
            why: stop.why,
            ...(stop.message !== undefined ? { error: stop.message } : {}),
          });
        } else if (!fold.end && !fold.awaitingApproval && !writer.broken) {
          await writer.write({
            type: "run-end",
            status: state.halted ? "halted" : error !== undefined ? "failed" : "completed",
            answer: "",
            why: state.halted ? "halted" : error !== undefined ? "error" : "returned",
            ...(error !== undefined ? { error: shortMessage(error) } : {}),
          });
        }
      } finally {
        // In the background: the run ends when its log is durable (shutdownExporters on exit).
        telemetry.requestFlush();
      }
    },
  };
  return { state, log };
}

function budgetDecision(
  budget: GuardBudget,
  state: RunState,
  tool: Tool<any, any> | undefined,
  activeMs: number,
): DenyDecision | undefined {
  const spend = state.spend;
  const deny = (message: string, limit: string): DenyDecision => ({
    type: "deny",
    reason: "budget_exceeded",
    message,
    fixHints: ["Finish with what you have; tell the user the budget ran out."],
    details: { limit },
  });
  const cost = tool?.costUsd ?? 0;
  if (budget.maxUsd !== undefined && spend.usd + cost > budget.maxUsd)
    return deny(
      `This call costs $${cost.toFixed(4)} and the run has $${Math.max(0, budget.maxUsd - spend.usd).toFixed(4)} left of its $${budget.maxUsd} budget.`,
      "maxUsd",
    );
  if (budget.maxToolCalls !== undefined && state.calls.length >= budget.maxToolCalls)
    return deny(
      `The run has made ${state.calls.length} tool calls, its budget's maxToolCalls.`,
      "maxToolCalls",
    );
  if (budget.maxTokens !== undefined && spend.inputTokens + spend.outputTokens >= budget.maxTokens)
    return deny(
      `The run has used ${spend.inputTokens + spend.outputTokens} tokens, its budget's maxTokens.`,
      "maxTokens",
    );
  if (budget.maxSteps !== undefined && spend.steps >= budget.maxSteps)
    return deny(`The run has made ${spend.steps} model calls, its budget's maxSteps.`, "maxSteps");
  if (budget.wallClockMs !== undefined && activeMs > budget.wallClockMs)
    return deny(
      `The run has been active ${Math.round(activeMs)} ms, past its budget's wallClockMs.`,
      "wallClockMs",
    );
  return undefined;
}

/** Checks the log options of `withRun` (synchronously, so bad input throws at the call). */
export function checkRunLogOptions(context: WithRunContext): void {
  const where = "[core] withRun(context, fn)";
  if (
    context.store !== undefined &&
    (typeof context.store?.append !== "function" || typeof context.store?.read !== "function")
  )
    throw new InvalidArgumentError(
      `${where}: store must be an EventStore (append, read, list), e.g. jsonlEventStore({ dir })`,
    );
  if (context.exporters !== undefined && !Array.isArray(context.exporters))
    throw new InvalidArgumentError(`${where}: exporters must be an array of exporters`);
  for (const key of ["redact", "onEvent", "onError", "now"] as const)
    if (context[key] !== undefined && typeof context[key] !== "function")
      throw new InvalidArgumentError(`${where}: ${key} must be a function`);
  if (
    context.vault !== undefined &&
    (typeof context.vault?.tokenize !== "function" || typeof context.vault?.reveal !== "function")
  )
    throw new InvalidArgumentError(`${where}: vault must have tokenize and reveal`);
  for (const [key, value] of Object.entries(context.budget ?? {}))
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
      throw new InvalidArgumentError(
        `${where}: budget.${key} must be a non-negative number, got ${String(value)}`,
      );
}

/** A person's answer to a parked approval of a guarded run. */
export interface GuardApprovalAnswer {
  decision: "approve" | "deny";
  /** Which request, when the run waits on more than one. */
  requestId?: string;
  approver?: string;
  note?: string;
}

/**
 * Records a person's answer to an approval a guarded run is waiting on (the same record
 * `agent.approve` writes). The run stays parked until the caller makes the identical call
 * again inside `withRun({ runId, store })`, which the answer then admits (or refuses) once.
 *
 * @example
 * await approveRun({ store, runId: "run_1", answer: { decision: "approve", approver: "maria" } });
 */
export async function approveRun(options: {
  store: EventStore;
  runId: string;
  answer: GuardApprovalAnswer;
  now?: () => number;
}): Promise<{ requestId: string; decision: ApprovalDecisionEvent["decision"] }> {
  const { store, runId, answer } = options;
  if (!store || typeof store.read !== "function")
    throw new InvalidArgumentError("[core] approveRun: store must be the run's EventStore");
  if (!answer || (answer.decision !== "approve" && answer.decision !== "deny"))
    throw new InvalidArgumentError(
      `[core] approveRun(${runId}): answer.decision must be "approve" or "deny", got ${JSON.stringify(answer?.decision)}`,
    );
  const events = await store.read(runId);
  if (events.length === 0)
    throw new InvalidArgumentError(
      `[core] approveRun: run ${runId} is not in the ${store.name} store`,
    );
  const fold = new RunFold(events[0]!, `run ${runId} (${store.name} store)`);
  for (let index = 1; index < events.length; index += 1) fold.apply(events[index]!);
  if (fold.start.model !== guardRunModel)
    throw new InvalidArgumentError(
      `[core] approveRun: run ${runId} is a loop run; answer it with agent.approve("${runId}", answer)`,
    );
  const turn = fold.pendingTurn;
  const waiting = turn ? [...turn.approvals.values()].filter((entry) => !entry.decision) : [];
  const target = answer.requestId
    ? waiting.find((entry) => entry.request.requestId === answer.requestId)
    : waiting.length === 1
      ? waiting[0]
      : undefined;
  if (!target)
    throw new InvalidArgumentError(
      waiting.length === 0
        ? `[core] approveRun: run ${runId} has no approval waiting (status ${fold.status}); nothing to answer`
        : `[core] approveRun: run ${runId} has ${waiting.length} open approvals (${waiting.map((entry) => entry.request.requestId).join(", ")}); pass answer.requestId to say which${answer.requestId ? `: ${answer.requestId} is not one of them` : ""}`,
    );
  const now = options.now ?? Date.now;
  const decision = now() > target.request.expiresAt ? "expired" : answer.decision;
  const writer = new RunWriter(store, runId, events.length, { now }, fold);
  await writer.write({
    type: "approval-decision",
    requestId: target.request.requestId,
    toolUseId: target.request.toolUseId,
    decision,
    ...(answer.approver ? { approver: answer.approver } : {}),
    ...(answer.note ? { note: answer.note } : {}),
  });
  return { requestId: target.request.requestId, decision };
}
