import {
  type AskDecision,
  type DecisionRecord,
  type DenyDecision,
  type EventStore,
  type Gate,
  InvalidArgumentError,
  type StoredEvent,
  type ToolCall,
} from "@loopguard/core";
import { foldRun, RunFold, type RunState, sortGates } from "@loopguard/core/plugin";
import { type LoadedPolicy, loadPolicy } from "./load-policy.js";
import { describeValue } from "./predicate.js";

/** Options of `replayRuns()`. */
export interface ReplayOptions {
  /**
   * The candidate policy: a policy document (object or JSON text), as `loadPolicy` reads it.
   * It is loaded again with the replay's clock, so time windows and rate limits are judged at
   * each call's recorded time against buckets of their own, never the live ones.
   */
  policy: string | object;
  /** Where the runs are: any EventStore (`jsonlEventStore({ dir })`, SQLite, PostgreSQL). */
  store: EventStore;
  /** Only runs updated at or after this time (a Date, epoch ms or an ISO date). */
  since?: Date | number | string;
  /** At most this many runs, newest first. Default all. */
  limit?: number;
  /** Called for each run that cannot be read (corrupt log): it is skipped, not fatal. */
  onSkip?: (runId: string, error: string) => void;
}

/** What the pipeline decided for a call: recorded, or the candidate's. */
export type ReplayOutcome = "allow" | "deny" | "ask";

/** One call whose decision would change. */
export interface ReplayChange {
  runId: string;
  toolUseId: string;
  tool: string;
  /** When the call was judged (epoch ms, from the log). */
  at: number;
  /** What happened then: the final outcome and whether a person was asked. */
  before: { outcome: "allow" | "deny"; asked: boolean; reason?: string; refusedAt?: string };
  /** What the candidate decides: deny (with reason), ask, or allow. */
  after: { outcome: ReplayOutcome; reason?: string; step?: string; message?: string };
  /** `allowed_to_denied`, `denied_to_allowed`, `to_ask`, or `ask_to_allow`. */
  change: "allowed_to_denied" | "denied_to_allowed" | "to_ask" | "ask_to_allow";
}

/** The result of a replay. */
export interface ReplayReport {
  /** Calls re-judged. */
  calls: number;
  allowedToDenied: number;
  deniedToAllowed: number;
  toAsk: number;
  /** Calls whose decision stays (every call not counted above, `ask_to_allow` included). */
  unchanged: number;
  /** Every changed decision, in time order. */
  changes: ReplayChange[];
  /** Runs read. */
  runs: number;
  /** Runs whose log could not be read, with why (skipped). */
  skippedRuns: Array<{ runId: string; error: string }>;
  /** Calls that could not be re-judged (their arguments are not in the log), by run. */
  unjudgeable: number;
  /** The candidate's digest. */
  policyDigest: string;
}

/** One recorded call, with everything needed to judge it again. */
interface RecordedCall {
  run: number;
  /** Index in the run's events of the event that decided the call (intent or refusal). */
  index: number;
  at: number;
  toolUseId: string;
  tool: string;
  args: Record<string, unknown>;
  before: ReplayChange["before"];
}

interface ReplayRun {
  runId: string;
  events: StoredEvent[];
  /** Core's own fold of the run (the one the loop and resume use), advanced call by call. */
  fold: RunFold;
  /** How many events are folded. */
  folded: number;
}

/** Steps whose decision a candidate policy replaces (policy, rate limits, the RunGuard). */
const policySteps = new Set(["2", "2.1", "2.3"]);
/** Steps before the policy: a call refused there never reaches it, whatever the candidate says. */
const earlySteps = new Set(["0", "0.7", "1"]);

/**
 * Re-judges every recorded call of past runs under a candidate policy and returns the calls
 * whose decision would change. Each call is judged with the run state it had at the time
 * (earlier admitted calls, refusals, outputs and spend of its run, folded from the log in
 * order), and calls of all runs are judged in the order they were made, so rate limits see the
 * traffic they would have seen. The candidate replaces the policy steps (2, 2.1, 2.3): a call
 * refused before them (kill switch, halt latch, validation) stays refused; a call refused after
 * them (taint, approval, breaker, budget) stays refused unless the candidate refuses it first.
 * A run whose log cannot be read is reported in `skippedRuns` and skipped.
 *
 * @example
 * const report = await replayRuns({ policy: await readFile("candidate.json", "utf8"), store: jsonlEventStore({ dir: ".loopguard/runs" }) });
 * if (report.allowedToDenied / report.calls > 0.01) process.exitCode = 1;
 */
export async function replayRuns(options: ReplayOptions): Promise<ReplayReport> {
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[policy] replayRuns(options): options must be an object such as { policy, store }",
    );
  const store = options.store;
  if (!store || typeof store.read !== "function" || typeof store.list !== "function")
    throw new InvalidArgumentError(
      `[policy] replayRuns({ store }): store must be an EventStore (jsonlEventStore({ dir }), sqliteEventStore, ...), got ${describeValue(store)}`,
    );
  const since = sinceOf(options.since);
  let clock = 0;
  const loaded: LoadedPolicy = loadPolicy(options.policy, { now: () => clock });
  const gates = sortGates(loaded.gates);

  const summaries = await store.list({
    ...(since !== undefined ? { updatedAfter: since - 1 } : {}),
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
  });
  const skippedRuns: ReplayReport["skippedRuns"] = [];
  const skip = (runId: string, error: string) => {
    skippedRuns.push({ runId, error });
    options.onSkip?.(runId, error);
  };
  const runs: ReplayRun[] = [];
  const calls: RecordedCall[] = [];
  let unjudgeable = 0;
  for (const summary of summaries) {
    if (summary.error !== undefined || summary.status === "unreadable") {
      skip(summary.runId, summary.error ?? "the run's log cannot be read");
      continue;
    }
    let events: StoredEvent[];
    try {
      events = await store.read(summary.runId);
    } catch (error) {
      skip(summary.runId, (error as Error)?.message ?? String(error));
      continue;
    }
    const start = events[0];
    if (start?.type !== "run-start") {
      skip(summary.runId, "the log does not begin with run-start");
      continue;
    }
    try {
      // The whole log must fold as the loop would fold it; a log that cannot is skipped.
      foldRun(events, `run ${summary.runId}`);
    } catch (error) {
      skip(summary.runId, (error as Error)?.message ?? String(error));
      continue;
    }
    const runIndex = runs.length;
    runs.push({
      runId: summary.runId,
      events,
      fold: new RunFold(start, `run ${summary.runId}`),
      folded: 1,
    });
    const found = collectCalls(runIndex, events);
    unjudgeable += found.unjudgeable;
    for (const call of found.calls) calls.push(call);
  }
  // Every run's calls in the order they were made: rate limits see the traffic as it came.
  calls.sort((a, b) => a.at - b.at || a.run - b.run || a.index - b.index);

  const changes: ReplayChange[] = [];
  let allowedToDenied = 0;
  let deniedToAllowed = 0;
  let toAsk = 0;
  let judged = 0;
  for (const recorded of calls) {
    const run = runs[recorded.run]!;
    advance(run, recorded.index);
    const refusedStep = recorded.before.refusedAt?.split(":")[0];
    judged += 1;
    if (refusedStep !== undefined && earlySteps.has(refusedStep)) continue;
    clock = recorded.at;
    const call: ToolCall = {
      tool: recorded.tool,
      args: recorded.args,
      toolUseId: recorded.toolUseId,
      idempotencyKey: `${run.runId}:${recorded.toolUseId}`,
      sensitive: false,
      idempotent: false,
      run: run.fold.state,
    };
    const verdict = await judge(gates, call);
    let after: ReplayChange["after"];
    if (verdict.type === "deny")
      after = {
        outcome: "deny",
        reason: verdict.reason,
        step: verdict.step,
        message: verdict.message,
      };
    else if (verdict.type === "ask")
      after = { outcome: "ask", reason: verdict.reason, message: verdict.message };
    else if (refusedStep !== undefined && !policySteps.has(refusedStep))
      // Refused after the policy steps (taint, approval, budget): that refusal still stands.
      after = {
        outcome: "deny",
        ...(recorded.before.reason ? { reason: recorded.before.reason } : {}),
      };
    else after = { outcome: "allow" };
    const change = classify(recorded.before, after);
    if (change === undefined) continue;
    if (change === "allowed_to_denied") allowedToDenied += 1;
    else if (change === "denied_to_allowed") deniedToAllowed += 1;
    else if (change === "to_ask") toAsk += 1;
    changes.push({
      runId: run.runId,
      toolUseId: recorded.toolUseId,
      tool: recorded.tool,
      at: recorded.at,
      before: recorded.before,
      after,
      change,
    });
  }
  return {
    calls: judged,
    allowedToDenied,
    deniedToAllowed,
    toAsk,
    unchanged: judged - allowedToDenied - deniedToAllowed - toAsk,
    changes,
    runs: runs.length,
    skippedRuns,
    unjudgeable,
    policyDigest: loaded.digest,
  };
}

function classify(
  before: ReplayChange["before"],
  after: ReplayChange["after"],
): ReplayChange["change"] | undefined {
  if (after.outcome === "deny") return before.outcome === "allow" ? "allowed_to_denied" : undefined;
  if (after.outcome === "ask") return before.asked ? undefined : "to_ask";
  if (before.outcome === "deny") return "denied_to_allowed";
  return before.asked ? "ask_to_allow" : undefined;
}

/** Runs the candidate's gates in step order: the first deny ends the call, asks are collected. */
async function judge(
  gates: readonly Gate[],
  call: ToolCall,
): Promise<{ type: "allow" } | (DenyDecision & { step: string }) | AskDecision> {
  let ask: AskDecision | undefined;
  const passed: Gate[] = [];
  let result: { type: "allow" } | (DenyDecision & { step: string }) | AskDecision | undefined;
  for (const gate of gates) {
    let decision: Awaited<ReturnType<Gate["check"]>>;
    try {
      decision = await gate.check(call);
    } catch {
      // As in the pipeline: a gate that throws is a deny.
      decision = {
        type: "deny",
        reason: "gate_error",
        message: `The ${gate.name} check failed, so the call was refused (gates fail closed).`,
      };
    }
    if (decision.type === "deny") {
      result = { ...decision, step: `${gate.step}:${gate.name}` };
      break;
    }
    if (decision.type === "ask") ask ??= decision;
    passed.push(gate);
  }
  result ??= ask ?? { type: "allow" };
  // Gates that keep state (rate limits) learn the outcome, as after a real call.
  const status = result.type === "deny" ? "refused" : "ok";
  for (const gate of gates) {
    try {
      await gate.observe?.({
        call,
        status,
        ...(result.type === "deny" ? { reason: result.reason } : {}),
        durationMs: 0,
      });
    } catch {
      // An observer cannot change a decision.
    }
  }
  return result;
}

/** The calls of one run, with the outcome recorded for each. */
function collectCalls(
  run: number,
  events: readonly StoredEvent[],
): { calls: RecordedCall[]; unjudgeable: number } {
  const inputs = new Map<string, Record<string, unknown>>();
  const asked = new Set<string>();
  for (const event of events) {
    if (event.type === "model-response") {
      for (const block of event.response.content)
        if (block.type === "tool_use") inputs.set(block.id, block.input as Record<string, unknown>);
    } else if (event.type === "approval-request") asked.add(event.toolUseId);
  }
  const calls: RecordedCall[] = [];
  const seen = new Set<string>();
  let unjudgeable = 0;
  for (let index = 0; index < events.length; index += 1) {
    const event = events[index]!;
    if (event.type !== "tool-call-intent" && event.type !== "tool-call-refusal") continue;
    // A parked call is refused as awaiting_approval and decided again later: judge the final one.
    if (event.type === "tool-call-refusal" && event.decision.reason === "awaiting_approval")
      continue;
    if (seen.has(event.toolUseId)) continue;
    seen.add(event.toolUseId);
    const args = event.type === "tool-call-intent" ? event.args : inputs.get(event.toolUseId);
    if (!args || typeof args !== "object") {
      unjudgeable += 1;
      continue;
    }
    const decision: DecisionRecord = event.decision;
    calls.push({
      run,
      index,
      at: event.at,
      toolUseId: event.toolUseId,
      tool: event.tool,
      args: args as Record<string, unknown>,
      before: {
        outcome: event.type === "tool-call-intent" ? "allow" : "deny",
        asked: asked.has(event.toolUseId),
        ...(decision.reason ? { reason: decision.reason } : {}),
        ...(decision.refusedAt ? { refusedAt: decision.refusedAt } : {}),
      },
    });
  }
  return { calls, unjudgeable };
}

/** Folds a run's events before `index` into its state: what the run knew when the call came. */
function advance(run: ReplayRun, index: number): void {
  for (; run.folded < index; run.folded += 1) run.fold.apply(run.events[run.folded]!);
}

/**
 * The run state a gate saw when the call at `index` was judged: core's fold of the events
 * before it (internal; the test that replay and the live loop see the same run uses it).
 */
export function replayStateAt(events: readonly StoredEvent[], index: number): RunState {
  const start = events[0];
  if (start?.type !== "run-start")
    throw new InvalidArgumentError("[policy] replayStateAt: the log does not begin with run-start");
  const run: ReplayRun = {
    runId: start.runId,
    events: [...events],
    fold: new RunFold(start, `run ${start.runId}`),
    folded: 1,
  };
  advance(run, index);
  return run.fold.state;
}

function sinceOf(value: ReplayOptions["since"]): number | undefined {
  if (value === undefined) return undefined;
  const at =
    value instanceof Date
      ? value.getTime()
      : typeof value === "number"
        ? value
        : typeof value === "string"
          ? Date.parse(value)
          : Number.NaN;
  if (!Number.isFinite(at))
    throw new InvalidArgumentError(
      `[policy] replayRuns({ since }): since must be a Date, epoch milliseconds or an ISO date such as "2026-12-01", got ${describeValue(value)}`,
    );
  return at;
}
