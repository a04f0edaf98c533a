import { withClearedResults, withSummary } from "./context-edits.js";
import type { StoredEvent } from "./contracts/event-store.js";
import type {
  ContentBlock,
  Message,
  ToolResultBlock,
  ToolUseBlock,
  Usage,
} from "./contracts/model.js";
import { createSha256 } from "./digest.js";
import { CorruptLogError } from "./errors.js";
import type {
  ApprovalDecisionEvent,
  ApprovalRequestEvent,
  ChildRunEndEvent,
  ChildRunStartEvent,
  ChildRunWaitEvent,
  ContextCompactedEvent,
  ContextCompactionRequestEvent,
  ModelRequestEvent,
  ModelResponseEvent,
  RunEndEvent,
  RunStartEvent,
  RunStatus,
  ToolCallIntentEvent,
  ToolCallRefusalEvent,
  ToolCallResultEvent,
} from "./events.js";
import { runEventTypes } from "./events.js";
import {
  type AdmittedCall,
  type RefusedCall,
  RunState,
  type SeenOutput,
  type TreeMark,
} from "./run-state.js";

/** The tool calls of the last assistant turn and how far they got. */
export interface PendingTurn {
  step: number;
  toolUses: ToolUseBlock[];
  /** Finished calls (a result or a refusal): the exact `tool_result` sent back. */
  results: Map<string, ToolResultBlock>;
  /** Admitted calls with no result yet: re-run them with the same idempotency key. */
  intents: Map<string, ToolCallIntentEvent>;
  /** Approval requests of this turn, with their decision when one was recorded. */
  approvals: Map<string, { request: ApprovalRequestEvent; decision?: ApprovalDecisionEvent }>;
  /**
   * Child runs of this turn's `asTool` calls (created on demand): their start, their park
   * (reset by a `run-resume`) and their end.
   */
  children?: Map<
    string,
    { start: ChildRunStartEvent; wait?: ChildRunWaitEvent | undefined; end?: ChildRunEndEvent }
  >;
}

const eventTypes = new Set<string>(runEventTypes);

/** Joins the text blocks of a content list. */
export function textOf(content: readonly ContentBlock[] | string): string {
  if (typeof content === "string") return content;
  let text = "";
  for (const block of content) if (block.type === "text") text += block.text;
  return text;
}

/**
 * A run rebuilt from its events: the loop applies every event it writes, and `resume` applies
 * the stored log, so a resumed run holds exactly the state (and conversation) of an uncrashed
 * one. `apply` throws `CorruptLogError`, naming the event, when the log cannot be a run.
 */
/**
 * The `model` of a run `withRun` logs for guarded calls. Such a run has no model turns: each
 * guarded call stands alone, its approvals stay open until answered, and an approval admits
 * the identical call (same tool, same argument digest) once.
 */
export const guardRunModel = "loopguard:guard";

export class RunFold {
  readonly start: RunStartEvent;
  readonly state: RunState;
  /** The conversation as the next model request sends it (a turn's results join when complete). */
  readonly messages: Message[];
  status: RunStatus = "running";
  end: RunEndEvent | undefined;
  /** Model responses received. */
  steps = 0;
  /** Model steps of the ended children and their descendants (from `child-run-end`). */
  childSteps = 0;
  pendingTurn: PendingTurn | undefined;
  /** A model request with no response yet (in flight, or the process died during the call). */
  orphanRequest: ModelRequestEvent | undefined;
  /**
   * Worst cases of requests that never got an outcome and were sent again after a resume: the
   * API may have billed them, so they stay spent.
   */
  supersededUsd = 0;
  lastAssistantText = "";
  /** The stop reason of the last model response. */
  lastStopReason: string | null | undefined;
  /** Prompt tokens plus output tokens of the last exchange, and the byte length they cover. */
  knownPrefix: { tokens: number; bytes: number } | undefined;
  /**
   * The prompt tokens the API reported for the last request and the conversation bytes it
   * sent (the context window's estimate calibrates on it); kept across context edits.
   */
  calibration: { tokens: number; bytes: number } | undefined;
  /** A compaction call with no outcome yet (in flight, or the process died during it). */
  orphanCompaction: ContextCompactionRequestEvent | undefined;
  /**
   * The last compaction outcome was `nothing_to_compact`: the loop does not try (and log)
   * again until a turn is old enough to summarise.
   */
  nothingToCompact = false;
  /** Tool results replaced by stubs (`context-edited`). */
  readonly clearedResults = new Set<string>();
  /** UTF-8 bytes of the conversation's JSON, kept as messages are added. */
  messageBytes: number;
  /** A running SHA-256 over every message after the first, digested only when asked. */
  /** Made at the first message after the task (a run parked before it holds none). */
  #chain: ReturnType<typeof createSha256> | undefined;
  #chainDigest: string | undefined = "";
  nextSeq = 1;
  /** The seq of the last `run-resume` (the session this process advances); absent before any. */
  resumeSeq: number | undefined;
  /**
   * Where the run started each child (in log order): a run read back from its log gets its
   * descendants' histories inserted there (`RunState.spliceDescendant`).
   */
  readonly childMarks: TreeMark[] = [];
  /**
   * Set on a child run read alone (a worker's job) whose parent already recorded an outcome
   * for its call, or ended: nothing waits for the child any more, so it takes no step.
   */
  withdrawn: string | undefined;
  /** In a guard run: the approvals that have admitted their call (each admits one). */
  readonly usedApprovals = new Set<string>();
  /** In a guard run: the tool-use ids of its calls. */
  readonly #guardCalls = new Set<string>();
  #sessionStart: number;
  #lastAt: number;
  #activeBefore = 0;
  readonly #where: string;

  readonly #reveal: ((text: string) => string) | undefined;

  /**
   * Starts a fold at a run's `run-start`. `options.reveal` (a vault's) turns tokens in tool
   * outputs back into values for the run state gates read; the conversation keeps the tokens.
   */
  constructor(
    start: StoredEvent,
    where = "the log",
    options: { state?: RunState; reveal?: (text: string) => string } = {},
  ) {
    const state = options.state;
    this.#reveal = options.reveal;
    this.#where = where;
    if (start.type !== "run-start") {
      throw new CorruptLogError(
        `[core] ${where} starts with a ${String(start.type)} event at seq 0; a run's log must start with run-start`,
      );
    }
    if (start.seq !== 0)
      throw new CorruptLogError(`[core] ${where}: run-start has seq ${start.seq}, expected 0`);
    this.start = start;
    this.state =
      state ??
      new RunState({
        runId: start.runId,
        agentId: start.agentId,
        roles: Array.isArray(start.context?.roles) ? (start.context.roles as string[]) : [],
        task: options.reveal ? options.reveal(start.task) : start.task,
        ...(start.context ? { attributes: start.context } : {}),
      });
    const first: Message = { role: "user", content: start.task };
    this.messages = [first];
    this.messageBytes = Buffer.byteLength(JSON.stringify(first));
    this.#sessionStart = start.at;
    this.#lastAt = start.at;
  }

  /** Counts the usage a failed attempt reported (a stream cut after `message_start`): budgets count every attempt. */
  #countAttempt(usage: Usage | undefined, costUsd: number | undefined): void {
    if (!usage) return;
    const spend = this.state.spend;
    spend.usd += costUsd ?? 0;
    spend.inputTokens +=
      usage.input_tokens +
      (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0);
    spend.outputTokens += usage.output_tokens;
  }

  /** The steps that count against the run's `maxSteps`: its own and its ended children's trees'. */
  get treeSteps(): number {
    return this.steps + this.childSteps;
  }

  /** USD spent, counting a request that may have been billed but has no response. */
  get committedUsd(): number {
    return (
      this.state.spend.usd +
      this.supersededUsd +
      (this.orphanRequest?.estimateUsd ?? 0) +
      (this.orphanCompaction?.estimateUsd ?? 0)
    );
  }

  /** Milliseconds the run has been active, summed over the processes that ran it. */
  activeMs(now = this.#lastAt): number {
    return this.#activeBefore + Math.max(0, now - this.#sessionStart);
  }

  /** Whether a tool call of the pending turn waits on a person. */
  get awaitingApproval(): boolean {
    const turn = this.pendingTurn;
    if (!turn || turn.approvals.size === 0) return false;
    for (const approval of turn.approvals.values()) {
      if (
        !approval.decision &&
        !turn.results.has(approval.request.toolUseId) &&
        !turn.intents.has(approval.request.toolUseId)
      )
        return true;
    }
    return false;
  }

  /**
   * A digest over every message of the conversation, so two runs that send the same bytes
   * agree. Computed when a model request asks for it, not per message.
   */
  get chainDigest(): string {
    if (this.#chainDigest === undefined) {
      this.#chain ??= createSha256();
      this.#chainDigest = this.#chain.hexDigest().slice(0, 32);
    }
    return this.#chainDigest;
  }

  /**
   * Whether the conversation holds a thinking block (the vault's reveal must then restore it
   * before a request; without one, the messages go as they are, with no walk over them).
   */
  hasThinking = false;

  #noteThinking(message: Message): void {
    if (this.hasThinking || message.role !== "assistant" || typeof message.content === "string")
      return;
    for (const block of message.content)
      if (block.type === "thinking") {
        this.hasThinking = true;
        return;
      }
  }

  #push(message: Message): void {
    this.messages.push(message);
    this.#noteThinking(message);
    // Encoded once: the JSON serves both the byte count (the token bound) and the digest.
    const json = JSON.stringify(message);
    this.messageBytes += Buffer.byteLength(json) + 1;
    this.#chain ??= createSha256();
    this.#chain.update(json);
    this.#chainDigest = undefined;
  }

  /** Replaces the conversation after a context edit: bytes and digest are computed again. */
  #replaceMessages(messages: Message[]): void {
    this.messages.length = 0;
    this.messages.push(...messages);
    this.hasThinking = false;
    for (const message of messages) this.#noteThinking(message);
    this.#chain = createSha256();
    this.messageBytes = Buffer.byteLength(JSON.stringify(messages[0]));
    for (const message of messages.slice(1)) {
      const json = JSON.stringify(message);
      this.messageBytes += Buffer.byteLength(json) + 1;
      this.#chain.update(json);
    }
    this.#chainDigest = undefined;
    // The API's count covered the conversation before the edit.
    this.knownPrefix = undefined;
  }

  /** A context event: only between a model response's tool turn and the next request. */
  #applyContext(event: StoredEvent): void {
    // A request with no response (the process died during the call) may be followed by an
    // edit: the next request supersedes it. A tool turn must be complete first.
    if (this.pendingTurn)
      throw new CorruptLogError(
        `[core] ${this.#label(event)} (${event.type}) edits the conversation while tool calls of step ${this.pendingTurn.step} have no result`,
      );
    switch (event.type) {
      case "context-edited": {
        const { messages, missing } = withClearedResults(this.messages, event.cleared);
        if (missing.length > 0)
          throw new CorruptLogError(
            `[core] ${this.#label(event)} clears tool results ${missing.join(", ")}, which the conversation does not hold`,
          );
        for (const entry of event.cleared) this.clearedResults.add(entry.toolUseId);
        this.#replaceMessages(messages);
        return;
      }
      case "context-compaction-request":
        if (this.orphanCompaction)
          throw new CorruptLogError(
            `[core] ${this.#label(event)} is a second compaction request before the first one's outcome`,
          );
        this.orphanCompaction = event;
        return;
      case "context-compacted":
        this.#onCompacted(event);
        return;
      case "context-compaction-failed":
        this.orphanCompaction = undefined;
        this.nothingToCompact = event.reason === "nothing_to_compact";
        this.#countAttempt(event.usage, event.costUsd);
        return;
    }
  }

  #onCompacted(event: ContextCompactedEvent & { seq: number; at: number }): void {
    if (!this.orphanCompaction || this.orphanCompaction.replaced !== event.replaced)
      throw new CorruptLogError(
        `[core] ${this.#label(event)} is a compaction outcome with no matching request before it`,
      );
    this.orphanCompaction = undefined;
    this.nothingToCompact = false;
    const messages = withSummary(this.messages, event.replaced, event.summary);
    if (typeof messages === "string")
      throw new CorruptLogError(`[core] ${this.#label(event)}: ${messages}`);
    this.#countAttempt(event.usage, event.costUsd);
    this.#replaceMessages(messages);
    // The summary is model-written text about untrusted content: gates read it as an output
    // (its scan verdict included), so values it carries stay tainted.
    this.state.outputs.push({
      tool: "context_summary",
      toolUseId: `context-summary:${event.seq}`,
      text: this.#reveal ? this.#reveal(event.summary) : event.summary,
      trust: "untrusted",
      ...(event.scan
        ? {
            scan: { verdict: event.scan.verdict, score: event.scan.score, rules: event.scan.rules },
          }
        : {}),
    });
  }

  #closeTurn(): void {
    // A guard run's calls never form a turn of the conversation.
    if (this.start.model === guardRunModel) return;
    const turn = this.pendingTurn;
    if (!turn || turn.results.size < turn.toolUses.length) return;
    if (!turn.toolUses.every((use) => turn.results.has(use.id))) return;
    this.#push({ role: "user", content: turn.toolUses.map((use) => turn.results.get(use.id)!) });
    this.pendingTurn = undefined;
  }

  #requireTurn(toolUseId: string, event: StoredEvent): PendingTurn {
    if (this.start.model === guardRunModel) return this.#guardTurn(toolUseId);
    const turn = this.pendingTurn;
    if (!turn || !turn.toolUses.some((use) => use.id === toolUseId)) {
      throw new CorruptLogError(
        `[core] ${this.#label(event)} refers to tool call ${toolUseId}, which the last assistant turn did not ask for`,
      );
    }
    return turn;
  }

  /** Where an event is, for errors: built only when one is thrown. */
  #label(event: StoredEvent): string {
    return `${this.#where} event ${event.seq}`;
  }

  /** Applies the next event of the log. */
  apply(event: StoredEvent): void {
    if (event.seq !== this.nextSeq)
      throw new CorruptLogError(
        `[core] ${this.#label(event)} has seq ${event.seq}, expected ${this.nextSeq}: the log has a gap or is out of order`,
      );
    if (!eventTypes.has(event.type))
      throw new CorruptLogError(
        `[core] ${this.#label(event)} has unknown type ${JSON.stringify(event.type)}`,
      );
    if (this.end && event.type !== "run-resume") {
      throw new CorruptLogError(
        `[core] ${this.#label(event)} (${event.type}) comes after run-end; nothing may follow the end of a run`,
      );
    }
    this.nextSeq += 1;
    this.#lastAt = Math.max(this.#lastAt, event.at);
    const state = this.state;
    switch (event.type) {
      case "run-start":
        throw new CorruptLogError(`[core] ${this.#label(event)} is a second run-start`);
      case "run-resume":
        this.#activeBefore = this.activeMs(this.#lastPreResume ?? event.at);
        this.#sessionStart = event.at;
        this.resumeSeq = event.seq;
        // A parked child is asked again when the run goes on: the park is over.
        for (const child of this.pendingTurn?.children?.values() ?? []) child.wait = undefined;
        break;
      case "child-run-start":
      case "child-run-wait":
      case "child-run-end":
        this.#onChild(event);
        break;
      case "model-request":
        if (this.pendingTurn)
          throw new CorruptLogError(
            `[core] ${this.#label(event)} is a model request while tool calls of step ${this.pendingTurn.step} have no result`,
          );
        // A request the process died during, sent again: the first may have been billed.
        if (this.orphanRequest) this.supersededUsd += this.orphanRequest.estimateUsd;
        this.orphanRequest = event;
        break;
      case "model-retry":
        this.#countAttempt(event.usage, event.costUsd);
        break;
      case "model-error":
        this.orphanRequest = undefined;
        this.#countAttempt(event.usage, event.costUsd);
        break;
      case "model-response":
        this.#onResponse(event);
        break;
      case "tool-call-intent": {
        const turn = this.#requireTurn(event.toolUseId, event);
        turn.intents.set(event.toolUseId, event);
        recordCall(state, event, this.#reveal);
        if (this.start.model === guardRunModel) this.#useApproval(turn, event);
        break;
      }
      case "tool-call-refusal": {
        const turn = this.#requireTurn(event.toolUseId, event);
        turn.results.set(event.toolUseId, {
          type: "tool_result",
          tool_use_id: event.toolUseId,
          content: event.content,
          is_error: true,
        });
        recordCall(state, event, this.#reveal);
        this.#closeTurn();
        break;
      }
      case "tool-call-result": {
        const turn = this.#requireTurn(event.toolUseId, event);
        if (!turn.intents.has(event.toolUseId))
          throw new CorruptLogError(
            `[core] ${this.#label(event)} is a result for ${event.toolUseId} with no intent before it`,
          );
        turn.intents.delete(event.toolUseId);
        turn.results.set(event.toolUseId, {
          type: "tool_result",
          tool_use_id: event.toolUseId,
          content: event.content,
          ...(event.isError ? { is_error: true } : {}),
        });
        recordCall(state, event, this.#reveal);
        this.#closeTurn();
        break;
      }
      case "approval-request": {
        const turn = this.#requireTurn(event.toolUseId, event);
        turn.approvals.set(event.toolUseId, { request: event });
        break;
      }
      case "approval-decision": {
        const turn = this.#requireTurn(event.toolUseId, event);
        const pending = turn.approvals.get(event.toolUseId);
        if (!pending || pending.request.requestId !== event.requestId) {
          throw new CorruptLogError(
            `[core] ${this.#label(event)} answers approval ${event.requestId}, which was never requested`,
          );
        }
        if (pending.decision)
          throw new CorruptLogError(
            `[core] ${this.#label(event)} answers approval ${event.requestId} a second time`,
          );
        pending.decision = event;
        break;
      }
      case "context-edited":
        // The API edited what the model read: the conversation (and the request bytes) stay.
        if (event.source === "server") break;
        this.#applyContext(event);
        break;
      case "context-compaction-request":
      case "context-compacted":
      case "context-compaction-failed":
        this.#applyContext(event);
        break;
      case "run-halt":
        state.restoreHalt(event.reason);
        break;
      case "run-end":
        this.end = event;
        break;
    }
    this.status = this.end
      ? this.end.status
      : this.awaitingApproval
        ? "awaiting_approval"
        : (this.#childWait() ?? "running");
    if (event.type !== "run-resume") this.#lastPreResume = event.at;
  }

  #lastPreResume: number | undefined;

  /** The status of a child the run is parked on: an approval first, else a child elsewhere. */
  #childWait(): "awaiting_approval" | "awaiting_child" | undefined {
    const children = this.pendingTurn?.children;
    if (!children) return undefined;
    let status: "awaiting_approval" | "awaiting_child" | undefined;
    for (const child of children.values()) {
      if (!child.wait || child.end) continue;
      if (child.wait.status === "awaiting_approval") return "awaiting_approval";
      status = "awaiting_child";
    }
    return status;
  }

  /** A child run's start, park or end, in the turn of the call that started it. */
  #onChild(
    event: (ChildRunStartEvent | ChildRunWaitEvent | ChildRunEndEvent) & {
      seq: number;
      at: number;
    },
  ): void {
    const turn = this.#requireTurn(event.callId, event);
    if (!turn.intents.has(event.callId))
      throw new CorruptLogError(
        `[core] ${this.#label(event)} (${event.type}) is for call ${event.callId}, which has no open intent`,
      );
    if (!turn.children) turn.children = new Map();
    const children = turn.children;
    const child = children.get(event.callId);
    if (event.type === "child-run-start") {
      // Written again when a resumed parent continues the same child: the first one stands.
      if (!child) {
        children.set(event.callId, { start: event });
        const state = this.state;
        this.childMarks.push({
          childRunId: event.childRunId,
          calls: state.calls.length,
          refusals: state.refusals.length,
          outputs: state.outputs.length,
        });
      }
      return;
    }
    if (!child || child.start.childRunId !== event.childRunId)
      throw new CorruptLogError(
        `[core] ${this.#label(event)} (${event.type}) names child run ${event.childRunId}, which no child-run-start of call ${event.callId} started`,
      );
    if (event.type === "child-run-wait") {
      child.wait = event;
      return;
    }
    if (child.end)
      throw new CorruptLogError(
        `[core] ${this.#label(event)} ends child run ${event.childRunId} a second time`,
      );
    child.end = event;
    child.wait = undefined;
    this.childSteps += event.treeSteps ?? event.steps;
    // One budget for the tree: what the child spent is the parent's spend from here on.
    const spend = this.state.spend;
    spend.usd += event.costUsd;
    spend.inputTokens += event.tokens.input;
    spend.outputTokens += event.tokens.output;
  }

  /** A model response: spend, the assistant message, and the turn of tool calls it asks for. */
  #onResponse(event: ModelResponseEvent & { seq: number; at: number }): void {
    const state = this.state;
    const request = this.orphanRequest;
    if (!request || request.step !== event.step) {
      throw new CorruptLogError(
        `[core] ${this.#label(event)} is a model response for step ${event.step} with no request before it`,
      );
    }
    this.orphanRequest = undefined;
    const response = event.response;
    if (!response || !Array.isArray(response.content) || !response.usage)
      throw new CorruptLogError(`[core] ${this.#label(event)} holds no response content or usage`);
    this.steps = event.step;
    state.spend.steps = event.step;
    state.spend.usd += event.costUsd;
    const usage = response.usage;
    const prompt =
      usage.input_tokens +
      (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0);
    state.spend.inputTokens += prompt;
    state.spend.outputTokens += usage.output_tokens;
    const bytesBefore = this.messageBytes;
    this.#push({ role: "assistant", content: response.content });
    this.knownPrefix = {
      tokens: prompt + usage.output_tokens,
      bytes: bytesBefore + (this.messageBytes - bytesBefore),
    };
    // Tokens the API cleared server-side were in the bytes sent: the rate counts them.
    let serverCleared = 0;
    for (const applied of response.context_management?.applied_edits ?? [])
      serverCleared += Number.isSafeInteger(applied.cleared_input_tokens)
        ? Math.max(0, applied.cleared_input_tokens)
        : 0;
    this.calibration = { tokens: prompt + serverCleared, bytes: bytesBefore };
    const text = textOf(response.content);
    if (text !== "") this.lastAssistantText = text;
    this.lastStopReason = response.stop_reason;
    if (response.stop_reason === "tool_use") {
      const toolUses = response.content.filter(
        (block): block is ToolUseBlock => block.type === "tool_use",
      );
      this.pendingTurn = {
        step: event.step,
        toolUses,
        results: new Map(),
        intents: new Map(),
        approvals: new Map(),
      };
      if (toolUses.length === 0) this.#closeTurn();
    }
  }

  /** A guard run's one standing turn, holding every call and approval of the run. */
  #guardTurn(toolUseId: string): PendingTurn {
    this.pendingTurn ??= {
      step: 0,
      toolUses: [],
      results: new Map(),
      intents: new Map(),
      approvals: new Map(),
    };
    if (!this.#guardCalls.has(toolUseId)) {
      this.#guardCalls.add(toolUseId);
      this.pendingTurn.toolUses.push({ type: "tool_use", id: toolUseId, name: "", input: {} });
    }
    return this.pendingTurn;
  }

  /** An admitted guard call uses the oldest unused approval of the same tool and arguments. */
  #useApproval(turn: PendingTurn, intent: ToolCallIntentEvent): void {
    for (const { request, decision } of turn.approvals.values()) {
      if (
        decision?.decision === "approve" &&
        request.tool === intent.tool &&
        request.argsDigest === intent.argsDigest &&
        !this.usedApprovals.has(request.requestId)
      ) {
        this.usedApprovals.add(request.requestId);
        return;
      }
    }
  }
}

/**
 * What a tool call's event changes in the run state gates read: an intent is an admitted call
 * (and its cost), a refusal a refused call, a result an output seen. The fold and `guardTool`
 * both record calls through this, so a gate sees the same run either way.
 */
export function recordCall(
  state: RunState,
  event: ToolCallIntentEvent | ToolCallRefusalEvent | ToolCallResultEvent,
  reveal?: (text: string) => string,
): void {
  const runId = state.runId;
  switch (event.type) {
    case "tool-call-intent": {
      if (event.costUsd) state.spend.usd += event.costUsd;
      const call: AdmittedCall = {
        tool: event.tool,
        argsDigest: event.argsDigest,
        toolUseId: event.toolUseId,
        // Gates compare real values (outputs are revealed too); the log keeps tokens.
        args: reveal ? (revealStrings(event.args, reveal) as typeof event.args) : event.args,
        outputsBefore: state.outputs.length,
        ...(event.decision?.passed ? { passed: event.decision.passed } : {}),
      };
      state.calls.push(call);
      // The ancestors held in this process see the tree: each records the call as well.
      if (state.treeParent) RunState.recordInAncestors(state, { kind: "call", runId, call });
      return;
    }
    case "tool-call-refusal": {
      const refusal: RefusedCall = {
        tool: event.tool,
        toolUseId: event.toolUseId,
        reason: event.decision.reason ?? "refused",
        decision: event.decision,
      };
      state.refusals.push(refusal);
      if (state.treeParent) RunState.recordInAncestors(state, { kind: "refusal", runId, refusal });
      return;
    }
    case "tool-call-result": {
      const output: SeenOutput = {
        tool: event.tool,
        toolUseId: event.toolUseId,
        text: reveal ? reveal(event.content) : event.content,
        trust: event.trust === "trusted" && !event.isError ? "trusted" : "untrusted",
        ...(event.scan
          ? {
              scan: {
                verdict: event.scan.verdict,
                score: event.scan.score,
                rules: event.scan.rules,
              },
            }
          : {}),
      };
      state.outputs.push(output);
      if (state.treeParent) RunState.recordInAncestors(state, { kind: "output", runId, output });
    }
  }
}

/** A JSON value with every string passed through `reveal` (the vault's tokens made real). */
function revealStrings(value: unknown, reveal: (text: string) => string): unknown {
  if (typeof value === "string") return reveal(value);
  if (Array.isArray(value)) return value.map((item) => revealStrings(item, reveal));
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, revealStrings(item, reveal)]),
    );
  return value;
}

/**
 * Folds a run's events into its state. The conversation comes out exactly as the uncrashed run
 * would send it next. Throws `CorruptLogError` (naming the event) when the log cannot be a run.
 */
export function foldRun(
  events: readonly StoredEvent[],
  where = "the log",
  options: { reveal?: (text: string) => string } = {},
): RunFold {
  const first = events[0];
  if (!first)
    throw new CorruptLogError(
      `[core] ${where} is empty: a run's log starts with a run-start event`,
    );
  const fold = new RunFold(first, where, options);
  for (let index = 1; index < events.length; index += 1) fold.apply(events[index]!);
  return fold;
}
