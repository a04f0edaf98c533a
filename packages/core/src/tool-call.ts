import type { ApprovalOutcome } from "./approval.js";
import { type ApprovalContext, type ApprovalSettings, approvalFor } from "./approvals.js";
import { breakerOf } from "./breakers.js";
import type { BreakerOptions } from "./circuit-breaker.js";
import {
  type AskDecision,
  type DenyDecision,
  type Gate,
  type GateDecision,
  isShadowGate,
  type ShadowGate,
  type ToolCall,
} from "./contracts/gate.js";
import type { Scanner } from "./contracts/scanner.js";
import type { Vault } from "./contracts/vault.js";
import { digestOf } from "./digest.js";
import type {
  ApprovalDecisionEvent,
  ApprovalRequestEvent,
  DecisionRecord,
  RunEvent,
  ShadowDecisionEvent,
} from "./events.js";
import { executeTool, formatToolOutput } from "./execute.js";
import type { JsonValue } from "./json.js";
import { type OutputEnvelope, type RecordedScan, scanOutput } from "./output.js";
import {
  defaultMaxOutputChars,
  type LimitedOutput,
  limitOutput,
  mapInSlices,
  yieldToEventLoop,
} from "./output-limit.js";

/** Outputs longer than this yield to the event loop between their stages (~16 KB of text). */
const yieldAboveChars = 16_384;

import type { CallScope } from "./call-scope.js";
import { type DelegatedOutcome, delegationOf } from "./delegation.js";
import { type Judgement, judgeCall } from "./pipeline.js";
import type { Tool } from "./tool.js";

/** The settings of the tool-call path, fixed for an agent or a guarded tool. */
export interface ToolPathOptions {
  /** User gates, sorted by step. */
  gates: readonly Gate[];
  haltOn: readonly string[];
  /** The digest of the gates' settings: approvals bind to it. */
  policyDigest: string;
  approval: ApprovalSettings;
  breaker: BreakerOptions | undefined;
  scanner: Scanner | undefined;
  envelope: OutputEnvelope | undefined;
  /** Reveals tokens in arguments at execution time; tokenises what the log records. */
  vault: Vault | undefined;
  toolRetry: { maxAttempts?: number; delayMs?: number };
  /** The cap on one output the model sees (a tool's own wins). Default 100 000. */
  maxOutputChars?: number;
  /** What the log keeps of a cut output: the digest (default) or also the whole output. */
  outputLog?: "digest" | "full";
  now: () => number;
  reportError: (error: unknown, where: string) => void;
}

export type { CallScope } from "./call-scope.js";

/** What the pipeline made of a call before it runs. */
export type Admission =
  | { type: "admitted"; args: Record<string, JsonValue> }
  | { type: "refused"; record: DecisionRecord }
  | { type: "parked"; record: DecisionRecord };

/** How an admitted call ended. */
export type Performance =
  | { type: "ok"; value: unknown; content: string; scan?: RecordedScan }
  | { type: "error"; kind: string; message: string }
  /** A delegated call whose child run parked (an approval, or a run elsewhere): no result yet. */
  | { type: "parked"; status: "awaiting_approval" | "awaiting_child" };

/** The text the model gets for a refused call. */
export function refusalText(record: DecisionRecord): string {
  const hints =
    record.fixHints && record.fixHints.length > 0
      ? ` What to do: ${record.fixHints.join(" ")}`
      : "";
  return `Refused (${record.reason}) at step ${record.refusedAt}: ${record.message ?? "the call was not allowed."}${hints}`;
}

/**
 * The one path of a tool call, shared by the loop and `guardTool`: the pipeline (gates,
 * approval, breaker, budget), the intent or refusal, the execution, the breaker's bookkeeping,
 * the gates' `observe`, the output scan and the result. Both callers write the same events and
 * give the approver the same request.
 */
export class ToolCallPath {
  readonly #options: ToolPathOptions;
  readonly #approvals: ApprovalContext;
  /** The gates that enforce, in step order. */
  readonly #enforcing: readonly Gate[];
  /** Shadow gates: judged beside the pipeline, never enforced. */
  readonly #shadows: readonly ShadowGate[];

  constructor(options: ToolPathOptions) {
    this.#options = options;
    this.#enforcing = options.gates.filter((gate) => !isShadowGate(gate));
    this.#shadows = options.gates.filter(isShadowGate);
    this.#approvals = {
      settings: options.approval,
      policyDigest: options.policyDigest,
      now: options.now,
      reportError: options.reportError,
      ...(options.vault ? { tokenize: (text: string) => options.vault!.tokenize(text) } : {}),
    };
  }

  /**
   * Judges a call and records the outcome: a `tool-call-refusal` (and `observe` of the refusal)
   * or a `tool-call-intent`, written before the call runs. `tool` is `undefined` when the
   * model named a tool that does not exist.
   */
  async admit(
    scope: CallScope,
    call: ToolCall,
    tool: Tool<any, any> | undefined,
    signal: AbortSignal,
  ): Promise<Admission> {
    const options = this.#options;
    const judgement = await judgeCall({
      call,
      tool,
      gates: this.#enforcing,
      haltOn: options.haltOn,
      approve: (ask) => this.#approve(scope, call, ask, signal),
      ...(scope.budget ? { budget: () => scope.budget!(tool) } : {}),
      ...(tool ? { breaker: breakerOf(tool, options.breaker) } : {}),
      onError: options.reportError,
    });
    if (this.#shadows.length > 0) await this.#judgeShadows(scope, call, judgement);
    // Gates judged real values, so their messages may quote them (a validation error names the
    // value it refused): what the model, the log and the host see is tokenised.
    const vault = options.vault;
    if (judgement.type === "park")
      return {
        type: "parked",
        record: vault ? tokenizeDeep(judgement.record, vault) : judgement.record,
      };
    if (judgement.type === "deny") {
      const record = vault ? tokenizeDeep(judgement.record, vault) : judgement.record;
      await scope.write({
        type: "tool-call-refusal",
        step: scope.step,
        toolUseId: call.toolUseId,
        tool: call.tool,
        decision: record,
        content: refusalText(record),
      });
      this.observe(call, "refused", judgement.record.reason, 0);
      return { type: "refused", record };
    }
    const args = judgement.args as Record<string, JsonValue>;
    await scope.write({
      type: "tool-call-intent",
      step: scope.step,
      toolUseId: call.toolUseId,
      tool: call.tool,
      args: options.vault ? tokenizeDeep(args, options.vault) : args,
      argsDigest: digestOf(args),
      idempotencyKey: call.idempotencyKey,
      decision: vault ? tokenizeDeep(judgement.record, vault) : judgement.record,
      ...(tool!.costUsd > 0 ? { costUsd: tool!.costUsd } : {}),
    });
    return { type: "admitted", args };
  }

  /**
   * Runs an admitted call (or re-runs an intent left without a result, with the same
   * idempotency key), updates the tool's breaker, scans and wraps the output (step 7), records
   * the `tool-call-result` and lets the gates `observe` it (when `call` is given).
   */
  async perform(
    scope: CallScope,
    tool: Tool<any, any>,
    toolUseId: string,
    args: Record<string, unknown>,
    idempotencyKey: string,
    signal: AbortSignal,
    call?: ToolCall,
  ): Promise<Performance> {
    const options = this.#options;
    const breaker = breakerOf(tool, options.breaker);
    if (scope.beforeEffect) {
      try {
        const confirming = scope.beforeEffect();
        if (confirming) await confirming;
      } catch (error) {
        breaker.release();
        throw error;
      }
    }
    const delegation = delegationOf(tool);
    if (delegation) {
      const outcome = scope.parentCall
        ? await delegation.run(
            scope.parentCall(toolUseId, args as Record<string, JsonValue>, signal),
          )
        : outsideLoop(tool.name);
      return this.#delegated(scope, tool, toolUseId, outcome, call);
    }
    const result = await executeTool(
      tool,
      options.vault ? argumentsFor(tool, args, options.vault) : args,
      { idempotencyKey, runId: scope.runId, agentId: scope.agentId, toolUseId },
      {
        signal,
        ...(options.toolRetry.maxAttempts ? { maxAttempts: options.toolRetry.maxAttempts } : {}),
        ...(options.toolRetry.delayMs !== undefined
          ? { retryDelayMs: options.toolRetry.delayMs }
          : {}),
      },
    );
    // A ToolError that is not transient is the tool answering (no such order, bad input), not
    // an outage: counting it would let one caller's bad arguments open the process-wide breaker
    // for every run (another tenant's included).
    if (result.status === "ok" || (result.errorKind === "tool_error" && result.transient === false))
      breaker.onSuccess();
    else if (result.errorKind !== "aborted") breaker.onFailure();
    else breaker.release();
    let performance: Performance;
    if (result.status === "ok") {
      const raw = formatToolOutput(result.value);
      // Cut before the vault, the scanner and the envelope, so their work is bounded by the cap.
      const limit = tool.maxOutputChars ?? options.maxOutputChars ?? defaultMaxOutputChars;
      // Within the cap (most outputs) the text goes on as it is, without a promise.
      const limited: LimitedOutput =
        raw.length <= limit ? { text: raw } : await limitOutput(raw, limit, tool.name);
      // A long output's stages (tokenise, scan and wrap) each get their own turn of the event loop.
      const long = limited.text.length > yieldAboveChars;
      if (long) await yieldToEventLoop();
      const text = options.vault ? options.vault.tokenize(limited.text) : limited.text;
      if (long && (options.scanner || options.envelope)) await yieldToEventLoop();
      const fullOutput =
        limited.cut && options.outputLog === "full"
          ? options.vault
            ? await mapInSlices(raw, (piece) => options.vault!.tokenize(piece))
            : raw
          : undefined;
      // Without a scanner or an envelope, step 7 leaves the text as it is: skip its promise.
      const { content, scan } =
        options.scanner || options.envelope
          ? await scanOutput(
              text,
              { source: "tool_output", tool: tool.name, toolUseId, runId: scope.runId },
              options.scanner,
              options.envelope,
              options.reportError,
            )
          : { content: text, scan: undefined };
      await scope.write({
        type: "tool-call-result",
        step: scope.step,
        toolUseId,
        tool: tool.name,
        ...(tool.trust === "trusted" ? { trust: "trusted" as const } : {}),
        status: "ok",
        content,
        ...(limited.cut ? { cut: limited.cut } : {}),
        ...(fullOutput !== undefined ? { fullOutput } : {}),
        isError: false,
        durationMs: Math.round(result.durationMs),
        attempts: result.attempts,
        ...(scan ? { scan } : {}),
      });
      performance = { type: "ok", value: result.value, content, ...(scan ? { scan } : {}) };
    } else {
      // A tool's error text may quote what it was given ("mailbox jane@... is full").
      const limit = tool.maxOutputChars ?? options.maxOutputChars ?? defaultMaxOutputChars;
      const { text: shown } = await limitOutput(result.message, limit, tool.name);
      const message = options.vault ? options.vault.tokenize(shown) : shown;
      result.message = message;
      await scope.write({
        type: "tool-call-result",
        step: scope.step,
        toolUseId,
        tool: tool.name,
        status: "error",
        content: `Error (${result.errorKind}): ${message}`,
        isError: true,
        durationMs: Math.round(result.durationMs),
        attempts: result.attempts,
        errorKind: result.errorKind,
      });
      performance = { type: "error", kind: result.errorKind, message: result.message };
    }
    if (call)
      this.observe(
        call,
        result.status,
        result.status === "error" ? result.errorKind : undefined,
        result.durationMs,
      );
    return performance;
  }

  /**
   * Records how a delegated call ended: the child's answer (scanned and wrapped like any
   * output, its scan the worse of the child's and this one), its typed error, or nothing when
   * the child parked (the intent stays open and the turn parks).
   */
  async #delegated(
    scope: CallScope,
    tool: Tool<any, any>,
    toolUseId: string,
    outcome: DelegatedOutcome,
    call: ToolCall | undefined,
  ): Promise<Performance> {
    const options = this.#options;
    const breaker = breakerOf(tool, options.breaker);
    if (outcome.type === "parked") {
      breaker.release();
      return { type: "parked", status: outcome.status };
    }
    if (outcome.type === "error") {
      breaker.onFailure();
      await scope.write({
        type: "tool-call-result",
        step: scope.step,
        toolUseId,
        tool: tool.name,
        status: "error",
        content: outcome.content,
        isError: true,
        durationMs: Math.round(outcome.durationMs),
        attempts: 1,
        errorKind: outcome.kind,
      });
      if (call) this.observe(call, "error", outcome.kind, outcome.durationMs);
      return { type: "error", kind: outcome.kind, message: outcome.message };
    }
    breaker.onSuccess();
    const scanned =
      options.scanner || options.envelope
        ? await scanOutput(
            outcome.content,
            { source: "tool_output", tool: tool.name, toolUseId, runId: scope.runId },
            options.scanner,
            options.envelope,
            options.reportError,
          )
        : { content: outcome.content, scan: undefined };
    const scan = worseScan(outcome.scan, scanned.scan);
    await scope.write({
      type: "tool-call-result",
      step: scope.step,
      toolUseId,
      tool: tool.name,
      ...(outcome.trust === "trusted" ? { trust: "trusted" as const } : {}),
      status: "ok",
      content: scanned.content,
      isError: false,
      durationMs: Math.round(outcome.durationMs),
      attempts: 1,
      ...(scan ? { scan } : {}),
    });
    if (call) this.observe(call, "ok", undefined, outcome.durationMs);
    return {
      type: "ok",
      value: outcome.content,
      content: scanned.content,
      ...(scan ? { scan } : {}),
    };
  }

  /**
   * Judges the call with every shadow gate and records a `shadow-decision` event where one would
   * have decided differently (or threw). A shadow never changes the judgement: its errors go to
   * `reportError` and into the event.
   */
  async #judgeShadows(scope: CallScope, call: ToolCall, judgement: Judgement): Promise<void> {
    const enforced: ShadowDecisionEvent["enforced"] =
      judgement.type === "park"
        ? { outcome: "ask", reason: judgement.ask.reason }
        : judgement.type === "allow"
          ? { outcome: judgement.approval ? "ask" : "allow" }
          : {
              outcome: "deny",
              ...(judgement.record.reason ? { reason: judgement.record.reason } : {}),
              ...(judgement.record.refusedAt ? { refusedAt: judgement.record.refusedAt } : {}),
            };
    for (const gate of this.#shadows) {
      let shadow: ShadowDecisionEvent["shadow"];
      try {
        const decision: GateDecision = await gate.judge(call);
        if (
          !decision ||
          (decision.type !== "allow" && decision.type !== "deny" && decision.type !== "ask")
        )
          throw new TypeError(
            `shadow gate returned ${JSON.stringify(decision)}; expected { type: "allow" | "deny" | "ask" }`,
          );
        if (!shadowDiffers(decision, enforced, gate.step)) continue;
        shadow =
          decision.type === "allow"
            ? { outcome: "allow" }
            : { outcome: decision.type, reason: decision.reason, message: decision.message };
      } catch (error) {
        this.#options.reportError(error, `shadow gate ${gate.name}`);
        shadow = { outcome: "error", message: (error as Error)?.message ?? String(error) };
      }
      await scope.write({
        type: "shadow-decision",
        step: scope.step,
        toolUseId: call.toolUseId,
        tool: call.tool,
        gate: gate.name,
        shadow,
        enforced,
      });
    }
  }

  /**
   * Step 3 for one ask. Approvals bind to `digestOf(args)` (RFC 8785, 64 hex characters): one
   * recorded under the 16-character digest of earlier versions never matches, and its refusal
   * says why.
   */
  async #approve(
    scope: CallScope,
    call: ToolCall,
    ask: AskDecision,
    signal: AbortSignal,
  ): Promise<ApprovalOutcome> {
    const outcome = await approvalFor(
      this.#approvals,
      scope,
      call,
      ask,
      digestOf(call.args),
      signal,
    );
    if (outcome.type !== "deny" || outcome.why !== "stale") return outcome;
    const recorded = scope.recordedApproval?.(call.toolUseId)?.request.argsDigest;
    if (recorded === undefined || /^[0-9a-f]{64}$/.test(recorded)) return outcome;
    return {
      ...outcome,
      note: `${outcome.note ? `${outcome.note}; ` : ""}it was recorded under the argument digest of an earlier loopguard (before RFC 8785 digests), so it cannot be matched to these arguments: ask again`,
    };
  }

  /** Tells every gate with `observe` how a call ended; observers fail open (to `reportError`). */
  observe(
    call: ToolCall,
    status: "ok" | "error" | "refused",
    reason: string | undefined,
    durationMs: number,
  ): void {
    const { gates, reportError } = this.#options;
    for (const gate of gates) {
      if (!gate.observe) continue;
      Promise.resolve()
        .then(() => gate.observe!({ call, status, ...(reason ? { reason } : {}), durationMs }))
        .catch((error) => reportError(error, `gate ${gate.name} observe`));
    }
  }
}

const verdictRank = { clean: 0, suspicious: 1, injection: 2 } as const;

/** The worse of two scans (a higher verdict, then a higher score); either may be absent. */
function worseScan(
  first: RecordedScan | undefined,
  second: RecordedScan | undefined,
): RecordedScan | undefined {
  if (!first) return second;
  if (!second) return first;
  const order = verdictRank[second.verdict] - verdictRank[first.verdict];
  if (order > 0 || (order === 0 && second.score > first.score)) return second;
  return first;
}

/** A delegating tool called outside an agent's loop (e.g. through `guardTool`). */
function outsideLoop(name: string): DelegatedOutcome {
  const message = `[core] tool "${name}" delegates to an agent (agent.asTool): it runs only as a tool of an agent's loop, which links the child run to its parent; guardTool cannot run it`;
  return {
    type: "error",
    kind: "child_refused",
    content: JSON.stringify({ error: { code: "child_refused", message } }),
    message,
    durationMs: 0,
  };
}

/**
 * Whether a shadow's decision differs from the enforced one: a deny where the call was not
 * refused, an ask where nobody was asked, or an allow where its own step refused.
 */
function shadowDiffers(
  decision: GateDecision,
  enforced: ShadowDecisionEvent["enforced"],
  step: string,
): boolean {
  if (decision.type === "deny") return enforced.outcome !== "deny";
  if (decision.type === "ask") return enforced.outcome === "allow";
  return enforced.outcome === "deny" && enforced.refusedAt?.split(":")[0] === step;
}

/**
 * The arguments a tool runs with: the real values where it declares `reveal` (all, or the
 * listed kinds), the vault's tokens everywhere else. The arguments arrive real (gates judged
 * them), so they are tokenised first; tokens are stable within a run.
 */
function argumentsFor(
  tool: Tool<any, any>,
  args: Record<string, unknown>,
  vault: Vault,
): Record<string, unknown> {
  const reveal = tool.reveal;
  if (reveal === true) return vault.reveal(args);
  const tokens = tokenizeDeep(args, vault);
  if (!reveal || reveal.length === 0) return tokens;
  const kinds = new Set(reveal);
  return mapStrings(tokens, (text) =>
    text.replace(/<([A-Z][A-Z0-9_]*)_\d+>/g, (token, kind: string) =>
      kinds.has(kind) ? vault.reveal(token) : token,
    ),
  );
}

function mapStrings<T>(value: T, map: (text: string) => string): T {
  if (typeof value === "string") return map(value) as T;
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = mapStrings(item, map);
    return out as T;
  }
  return value;
}

/** Tokenises every string of a JSON value with the vault (for what the log records). */
function tokenizeDeep<T>(value: T, vault: Vault): T {
  if (typeof value === "string") return vault.tokenize(value) as T;
  if (Array.isArray(value)) return value.map((item) => tokenizeDeep(item, vault)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = tokenizeDeep(item, vault);
    return out as T;
  }
  return value;
}
