/**
 * The events a run's log is made of. A run is a fold over these (see `foldRun`).
 *
 * Events are written before the action they describe. Names are kebab-case and never change
 * once shipped; new optional fields may be added.
 */

import type { ContentBlock, ModelResponse, Usage } from "./contracts/model.js";
import type { ScanVerdict } from "./contracts/scanner.js";
import type { JsonValue } from "./json.js";
import type { StreamSkip } from "./stream/assemble-message.js";

/** The status of a run. */
export type RunStatus =
  | "running"
  | "awaiting_approval"
  | "awaiting_child"
  | "completed"
  | "stopped"
  | "halted"
  | "failed";

/** A run's budget; every limit is optional. */
export interface Budget {
  maxSteps?: number;
  maxTokens?: number;
  maxUsd?: number;
  wallClockMs?: number;
}

/** The record of what the pipeline decided for one call. */
export interface DecisionRecord {
  /** `allow`, `deny` or `ask` (an `ask` that was answered ends as allow or deny). */
  outcome: "allow" | "deny";
  /** Every step the call passed, as `step:name` (e.g. `1:validation`). */
  passed: string[];
  /** The step that refused, as `step:name` (e.g. `2.3:run_loop`); absent when allowed. */
  refusedAt?: string;
  /** The stable reason code of a refusal. */
  reason?: string;
  message?: string;
  fixHints?: string[];
  /** The gate that refused. */
  gate?: string;
  details?: Record<string, JsonValue>;
  /** Whether the refusal halted the run. */
  halted?: boolean;
}

export interface RunStartEvent {
  type: "run-start";
  runId: string;
  agentId: string;
  task: string;
  model: string;
  system?: string;
  maxTokens: number;
  budget: Budget;
  /** Digest of every gate's settings (the policy and RunGuard included). */
  policyDigest: string;
  /** Digest of the tool definitions. */
  toolDigest: string;
  /** Agent roles and other host context. */
  context?: Record<string, JsonValue>;
  /** How long the run waited for a slot (`maxConcurrentRuns`) before it started, in ms; absent when it did not wait. */
  queueWaitMs?: number;
  /** Set on a child run (an agent called through `asTool`): the run and call that started it. */
  parent?: RunParent;
}

/** Where a child run comes from: its parent run, the parent's call, and its place in the tree. */
export interface RunParent {
  /** The parent run's id. */
  runId: string;
  /** The parent's tool call (`tool_use` id) that started this run. */
  callId: string;
  /** The parent's tool (the `asTool` name) that was called. */
  tool: string;
  /** 1 for a direct child of a root run, 2 for a grandchild, ... */
  depth: number;
  /** The id of the tree's root run. */
  rootRunId: string;
}

export interface ModelRequestEvent {
  type: "model-request";
  step: number;
  maxTokens: number;
  /** The worst-case cost of this call, reserved against the budget. */
  estimateUsd: number;
  /** Digest of the exact request body, to prove a resumed run sends the same bytes. */
  requestDigest: string;
}

export interface ModelRetryEvent {
  type: "model-retry";
  step: number;
  attempt: number;
  kind: string;
  status?: number;
  waitMs: number;
  message: string;
  /** The usage the API reported for the failed attempt (a stream cut after `message_start`); counted in the spend. */
  usage?: Usage;
  /** The cost of that usage. */
  costUsd?: number;
  /** The attempt had streamed content to the host, which was told to discard it (`stream-reset`). */
  reset?: boolean;
}

export interface ModelResponseEvent {
  type: "model-response";
  step: number;
  response: ModelResponse;
  costUsd: number;
  latencyMs: number;
  attempts: number;
  /** Whether the answer was streamed (`gen_ai.request.stream`). */
  streamed?: boolean;
  /** Milliseconds from sending the request to the first streamed event (`gen_ai.response.time_to_first_chunk`). */
  firstChunkMs?: number;
  /**
   * Stream events and deltas skipped, and content blocks kept unread, because their type is
   * newer than this version of loopguard (the API adds types); never a failed run.
   */
  skipped?: StreamSkip[];
}

export interface ModelErrorEvent {
  type: "model-error";
  step: number;
  kind: string;
  status?: number;
  message: string;
  attempts: number;
  /** The usage the API reported for the last failed attempt; counted in the spend. */
  usage?: Usage;
  costUsd?: number;
}

export interface ToolCallIntentEvent {
  type: "tool-call-intent";
  step: number;
  toolUseId: string;
  tool: string;
  args: Record<string, JsonValue>;
  argsDigest: string;
  idempotencyKey: string;
  decision: DecisionRecord;
  /** What the call costs (the tool's `costUsd`), counted as spent when the intent is written. */
  costUsd?: number;
}

export interface ToolCallRefusalEvent {
  type: "tool-call-refusal";
  step: number;
  toolUseId: string;
  tool: string;
  decision: DecisionRecord;
  /** The exact `tool_result` content sent to the model. */
  content: string;
}

export interface ToolCallResultEvent {
  type: "tool-call-result";
  step: number;
  toolUseId: string;
  tool: string;
  /** Present when the tool declared `trust: "trusted"` and the call succeeded. */
  trust?: "trusted";
  status: "ok" | "error";
  /** The exact `tool_result` content sent to the model (enveloped). */
  content: string;
  /**
   * Present when the output was longer than the tool's `maxOutputChars`: `content` holds its head
   * and tail around a marker; this names the whole output (its length, what was cut, its SHA-256).
   */
  cut?: { chars: number; removedChars: number; sha256: string };
  /** With `outputLog: "full"` and a cut output: the whole output, tokenised by the vault. */
  fullOutput?: string;
  isError: boolean;
  durationMs: number;
  attempts: number;
  /** `timeout`, `tool_error`, `exception`, `aborted` for errors. */
  errorKind?: string;
  scan?: { verdict: ScanVerdict; score: number; rules: string[]; scanner?: string };
}

export interface ApprovalRequestEvent {
  type: "approval-request";
  step: number;
  requestId: string;
  toolUseId: string;
  tool: string;
  argsDigest: string;
  policyDigest: string;
  /** The first ask's reason (every ask is in `reasons`). */
  reason: string;
  message: string;
  /**
   * Every ask of the call (policy, taint, ...): the approver saw all of them, and an approval
   * covers exactly these. Absent in logs written before it existed (then `reason` alone).
   */
  reasons?: Array<{ reason: string; message: string; gate?: string }>;
  expiresAt: number;
}

export interface ApprovalDecisionEvent {
  type: "approval-decision";
  requestId: string;
  toolUseId: string;
  /**
   * `approve`, `deny`, `timeout`, `expired`, `indeterminate` for an unreadable answer, or
   * `withdrawn`: the run ended (`stopRun`) before anyone answered, so nobody can any more.
   */
  decision:
    | "approve"
    | "deny"
    | "timeout"
    | "expired"
    | "indeterminate"
    | "no_approver"
    | "withdrawn";
  approver?: string;
  note?: string;
}

/**
 * A shadow gate (`shadow(gate)` in `@loopguard/policy`) would have decided a call differently
 * from the enforcing pipeline: deny where the call was let through, ask where nobody was asked,
 * allow where its own step refused; or it threw (`shadow.outcome` `error`). Written beside the
 * call's intent or refusal; it never changes what the pipeline decided.
 */
export interface ShadowDecisionEvent {
  type: "shadow-decision";
  step: number;
  toolUseId: string;
  tool: string;
  /** The shadow gate's name, e.g. `shadow:policy`. */
  gate: string;
  /** What the candidate decided. */
  shadow: { outcome: "allow" | "deny" | "ask" | "error"; reason?: string; message?: string };
  /** What the enforcing pipeline decided (an answered approval counts as `ask`). */
  enforced: { outcome: "allow" | "deny" | "ask"; reason?: string; refusedAt?: string };
}

/** One tool result the loop replaced by a stub to keep the conversation inside the context window. */
export interface ClearedToolResult {
  toolUseId: string;
  tool: string;
  /** The first 16 hex digits of the SHA-256 of the content the model had seen. */
  digest: string;
  /** Characters of that content. */
  chars: number;
  /** Marks the result carried (a scan verdict, untrusted, an error, vault tokens), kept in the stub. */
  marks?: string[];
  /** The exact text the model sees in its place from now on. */
  stub: string;
}

/**
 * The conversation was edited to keep it inside the context window. By the loop (`source`
 * absent or `client`): older tool results replaced by stubs naming the tool, the call and the
 * result's digest (the model can call the tool again), written before the request that sends
 * the edited conversation. By the API (`source: "server"`, server-side context editing):
 * written after the response that reported it; the request bytes and the conversation do not
 * change, `cleared` is empty and `server` holds what the API said it cleared.
 */
export interface ContextEditedEvent {
  type: "context-edited";
  /** Who edited: the loop (`client`, the default) or the API (`server`). */
  source?: "client" | "server";
  /**
   * The step whose request is the first to send the edited conversation (`client`), or whose
   * prompt the API edited (`server`).
   */
  step: number;
  edit: "clear_tool_results";
  /** `threshold` (past `clearToolResults.atFraction`), `compaction_failed`, or `over_limit` (the last resort before a request over the window). */
  reason: "threshold" | "compaction_failed" | "over_limit";
  /** Tool results kept whole (the most recent ones). */
  keepLast: number;
  cleared: ClearedToolResult[];
  /** Estimated prompt tokens of the next request before and after the edit. */
  tokensBefore: number;
  tokensAfter: number;
  maxInputTokens: number;
  /** Whether `tokensBefore` was counted by the model's count-tokens endpoint (not estimated). */
  counted?: boolean;
  /**
   * `source: "server"`: the API's `applied_edits` entry (its type, the tool uses whose results
   * it cleared, the prompt tokens it removed); `tokensBefore`/`tokensAfter` are then the
   * prompt tokens the API reported plus the cleared ones, and the reported ones.
   */
  server?: { type: string; clearedToolUses: number; clearedInputTokens: number };
}

/**
 * The loop asks a model to summarise the older turns (compaction). Written before the call: a
 * crash during it leaves this event without an outcome, and the resumed run re-issues the same
 * request (same turns, same bytes, same idempotency key).
 */
export interface ContextCompactionRequestEvent {
  type: "context-compaction-request";
  step: number;
  /** The model asked for the summary. */
  model: string;
  /** How many messages after the first user turn the summary replaces. */
  replaced: number;
  maxTokens: number;
  /** The worst-case cost of the call, reserved against the budget until it answers. */
  estimateUsd: number;
  /** Estimated prompt tokens of the next request before compaction. */
  tokensBefore: number;
  idempotencyKey: string;
}

/**
 * The older turns were replaced by the summary: the conversation is now the first user turn,
 * the summary (a user turn), and the turns kept whole. Its usage counts in the run's spend.
 */
export interface ContextCompactedEvent {
  type: "context-compacted";
  step: number;
  model: string;
  replaced: number;
  /** The summary as the model sees it: through the vault, the redactor, the scanner and the envelope. */
  summary: string;
  /** Estimated tokens of the turns the summary replaced. */
  replacedTokens: number;
  tokensBefore: number;
  tokensAfter: number;
  usage: Usage;
  costUsd: number;
  latencyMs: number;
  attempts: number;
  /** The scanner's verdict on the summary (model-written text about untrusted content). */
  scan?: { verdict: ScanVerdict; score: number; rules: string[]; scanner?: string };
}

/**
 * A compaction did not replace anything (the model failed, the summary was empty, longer than
 * what it replaced or flagged as an injection, the budget could not afford it, or nothing was
 * old enough): the loop falls back to clearing tool results. Usage of a call made counts.
 */
export interface ContextCompactionFailedEvent {
  type: "context-compaction-failed";
  step: number;
  model: string;
  reason:
    | "model_error"
    | "empty_summary"
    | "summary_too_long"
    | "flagged_summary"
    | "budget"
    | "nothing_to_compact";
  message: string;
  usage?: Usage;
  costUsd?: number;
}

/**
 * A parent run starts (or, on resume, continues) a child run for one tool call. Written in
 * the parent's log before the child's `run-start`, after the call's `tool-call-intent`.
 */
export interface ChildRunStartEvent {
  type: "child-run-start";
  step: number;
  /** The parent's `tool_use` id. */
  callId: string;
  /** The parent's tool (the `asTool` name). */
  tool: string;
  /** The child run's id (`childRunId(parentRunId, callId)`). */
  childRunId: string;
  /** The child agent's id. */
  agentId: string;
  /** The child's depth (1 for a child of a root run). */
  depth: number;
  /** The child's caps: its own budget shrunk to its share of what the parent had left. */
  budget: Budget;
}

/**
 * A child run parked (on an approval, or running elsewhere, e.g. on another worker): the parent
 * parks too, as `awaiting_approval` or `awaiting_child`, with the call's intent still open.
 * Resuming the parent runs the call again, which finds the same child.
 */
export interface ChildRunWaitEvent {
  type: "child-run-wait";
  step: number;
  callId: string;
  childRunId: string;
  status: "awaiting_approval" | "awaiting_child";
  /** The approvals the child waits on, with the chain that led to them (parent task, child task, call). */
  approvals?: ChildApprovalRequest[];
}

/** An approval a child run waits on, as its parent's log records it. */
export interface ChildApprovalRequest {
  /** The child run that asked (maybe a grandchild: the run that holds the request). */
  runId: string;
  requestId: string;
  tool: string;
  toolUseId: string;
  reason: string;
  message: string;
  expiresAt: number;
  /** From the root down: each run's task and the call that started the next one. */
  chain: Array<{ runId: string; agentId: string; task: string; callId?: string; tool?: string }>;
}

/**
 * A child run ended: what it cost (charged to the parent's spend with this event), its status
 * and the provenance of its answer. Written before the parent's `tool-call-result`.
 */
export interface ChildRunEndEvent {
  type: "child-run-end";
  step: number;
  callId: string;
  childRunId: string;
  status: Exclude<RunStatus, "running" | "awaiting_approval" | "awaiting_child">;
  /** The child tree's spend (the child and its own children). */
  costUsd: number;
  tokens: { input: number; output: number };
  /** The child's own model steps. */
  steps: number;
  /**
   * The model steps of the child and every descendant: what counts against each ancestor's
   * `maxSteps` (one budget for the tree). Absent in logs written before it: `steps` counts.
   */
  treeSteps?: number;
  /** `trusted` when the child read nothing but the task and trusted tools' outputs. */
  trust: "trusted" | "untrusted";
  /** The worst scan verdict of what the child read (so flagged text stays flagged). */
  scan?: { verdict: ScanVerdict; score: number; rules: string[] };
  /** Why the child did not complete. */
  error?: string;
}

export interface RunHaltEvent {
  type: "run-halt";
  reason: string;
  toolUseId?: string;
  source: string;
}

export interface RunResumeEvent {
  type: "run-resume";
  fromSeq: number;
}

export interface RunEndEvent {
  type: "run-end";
  status: Exclude<RunStatus, "running">;
  answer: string;
  /** Why the run ended: `end_turn`, `max_tokens`, `refusal`, `budget`, `wall_clock`, `cancelled`, ... */
  why: string;
  /** The budget limit that stopped the run. */
  limit?: "maxSteps" | "maxTokens" | "maxUsd" | "wallClockMs";
  error?: string;
}

/** Any event of a run's log. */
export type RunEvent =
  | RunStartEvent
  | ModelRequestEvent
  | ModelRetryEvent
  | ModelResponseEvent
  | ModelErrorEvent
  | ToolCallIntentEvent
  | ToolCallRefusalEvent
  | ToolCallResultEvent
  | ApprovalRequestEvent
  | ApprovalDecisionEvent
  | ShadowDecisionEvent
  | ContextEditedEvent
  | ContextCompactionRequestEvent
  | ContextCompactedEvent
  | ContextCompactionFailedEvent
  | ChildRunStartEvent
  | ChildRunWaitEvent
  | ChildRunEndEvent
  | RunHaltEvent
  | RunResumeEvent
  | RunEndEvent;

/** The `type` of every event. */
export type RunEventType = RunEvent["type"];

/** The names of all event types, for validation. */
export const runEventTypes: readonly RunEventType[] = [
  "run-start",
  "model-request",
  "model-retry",
  "model-response",
  "model-error",
  "tool-call-intent",
  "tool-call-refusal",
  "tool-call-result",
  "approval-request",
  "approval-decision",
  "shadow-decision",
  "context-edited",
  "context-compaction-request",
  "context-compacted",
  "context-compaction-failed",
  "child-run-start",
  "child-run-wait",
  "child-run-end",
  "run-halt",
  "run-resume",
  "run-end",
];

/** Content blocks of a response that the loop passes back unchanged. */
export type AssistantContent = ContentBlock[];
