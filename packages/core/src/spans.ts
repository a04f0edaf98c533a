import type { StoredEvent } from "./contracts/event-store.js";
import type { Message, ToolUseBlock } from "./contracts/model.js";
import type { AttributeValue, Span, SpanKind } from "./contracts/span.js";
import { sha256 } from "./digest.js";
import { RunFold } from "./fold.js";

// The span model moved to contracts/span.ts; the names stay importable from here.
export type { AttributeValue, Span, SpanEvent, SpanKind } from "./contracts/span.js";

const hex = (text: string, length: number) => sha256(text).slice(0, length);

/** The trace id of a run. */
export function traceIdOf(runId: string): string {
  return hex(`trace:${runId}`, 32);
}

/**
 * The id of the `execute_tool` span of call `toolUseId` in run `runId`, in the session that
 * began with the `run-resume` at `resumeSeq` (absent: the run's first process). A child run's
 * span hangs under it.
 */
export function toolSpanIdOf(runId: string, toolUseId: string, resumeSeq?: number): string {
  return hex(
    `${runId}:tool:${toolUseId}${resumeSeq === undefined ? "" : `:resume:${resumeSeq}`}`,
    16,
  );
}

/** Options of a span builder. */
export interface SpanBuilderOptions {
  /**
   * For a child run: the parent's `execute_tool` span its run spans hang under (the parent's
   * current session). Default: that call's span in the parent's first session.
   */
  parentSpanId?: string | undefined;
}

/**
 * Builds spans from a run's events as they arrive, live or from a stored log. Finished spans
 * come out of `push` and `finish`; each span comes out once.
 */
export class SpanBuilder {
  readonly #runId: string;
  /** A run's own trace; a child run's is its tree root's (set at its run-start). */
  #traceId: string;
  /** A child run's parent span (the parent's `execute_tool` span of the call). */
  #parentSpanId: string | undefined;
  readonly #options: SpanBuilderOptions;
  #run: Span | undefined;
  #step: Span | undefined;
  #model: Span | undefined;
  #compaction: Span | undefined;
  #tools = new Map<string, Span>();
  #toolUses = new Map<string, ToolUseBlock>();
  #lastAt = 0;
  #sent = 0;
  /** Empty for the first process; `:resume:<seq>` after each resume, so every id stays unique. */
  #session = "";

  constructor(runId: string, options: SpanBuilderOptions = {}) {
    this.#runId = runId;
    this.#traceId = traceIdOf(runId);
    this.#options = options;
  }

  #span(kind: SpanKind, key: string, name: string, at: number, parent?: Span): Span {
    const parentSpanId = parent ? parent.spanId : kind === "run" ? this.#parentSpanId : undefined;
    return {
      traceId: this.#traceId,
      spanId: hex(`${this.#runId}:${key}${this.#session}`, 16),
      ...(parentSpanId ? { parentSpanId } : {}),
      kind,
      name,
      startTime: at,
      endTime: at,
      status: "unset",
      attributes: { "loopguard.run_id": this.#runId },
      events: [],
    };
  }

  /**
   * Feeds one event; returns the spans it finished. `conversation` is the run's conversation
   * as of this event (the fold's messages): model spans then carry the messages each request
   * added as their input content.
   */
  push(event: StoredEvent, conversation?: readonly Message[]): Span[] {
    const done: Span[] = [];
    const at = event.at;
    const before = this.#lastAt;
    this.#lastAt = Math.max(this.#lastAt, at);
    switch (event.type) {
      case "run-start":
        this.#runStart(event, at);
        break;
      case "run-resume":
        this.#runResume(event, at, done, before);
        break;
      case "model-request":
        this.#modelRequest(event, at, done, conversation);
        break;
      case "model-retry":
      case "model-response":
      case "model-error":
        this.#modelOutcome(event, at, done);
        break;
      case "tool-call-intent":
      case "approval-request":
      case "approval-decision":
        this.#toolProgress(event, at);
        break;
      case "child-run-start":
      case "child-run-wait":
      case "child-run-end":
        this.#childProgress(event, at);
        break;
      case "tool-call-refusal":
      case "tool-call-result":
        this.#toolEnd(event, at, done);
        break;
      case "run-halt":
      case "run-end":
        this.#runOutcome(event, at, done);
        break;
      case "context-edited":
      case "context-compaction-request":
      case "context-compacted":
      case "context-compaction-failed":
        this.#context(event, at, done, conversation);
        break;
      case "shadow-decision":
        // A shadow policy would have decided this call differently: counted on the run span.
        if (this.#run) {
          const count = this.#run.attributes["loopguard.shadow.differences"];
          this.#run.attributes["loopguard.shadow.differences"] =
            (typeof count === "number" ? count : 0) + 1;
        }
        break;
    }
    return done;
  }

  /**
   * Context-window edits: a clearing is an event on the run span; a compaction call is a
   * model span (`chat <model>`, `loopguard.context.compaction`) under the run.
   */
  #context(
    event: StoredEvent & {
      type:
        | "context-edited"
        | "context-compaction-request"
        | "context-compacted"
        | "context-compaction-failed";
    },
    at: number,
    done: Span[],
    conversation: readonly Message[] | undefined,
  ): void {
    if (conversation) this.#sent = conversation.length;
    if (event.type === "context-edited") {
      this.#run?.events.push({
        name: "context.edited",
        time: at,
        attributes: {
          "loopguard.context.reason": event.reason,
          "loopguard.context.source": event.source ?? "client",
          "loopguard.context.cleared": event.server?.clearedToolUses ?? event.cleared.length,
          "loopguard.context.tokens_before": event.tokensBefore,
          "loopguard.context.tokens_after": event.tokensAfter,
        },
      });
      return;
    }
    if (event.type === "context-compaction-request") {
      const span = this.#span(
        "model",
        `compaction:${event.seq}`,
        `chat ${event.model}`,
        at,
        this.#run,
      );
      Object.assign(span.attributes, {
        "loopguard.model": event.model,
        "loopguard.step": event.step,
        "loopguard.context.compaction": true,
        "loopguard.context.replaced_messages": event.replaced,
        "loopguard.context.tokens_before": event.tokensBefore,
        "loopguard.request.max_tokens": event.maxTokens,
        "loopguard.estimate_usd": event.estimateUsd,
      });
      this.#end(done, this.#compaction, at);
      this.#compaction = span;
      return;
    }
    const span = this.#compaction;
    if (!span) return;
    this.#compaction = undefined;
    if (event.usage)
      Object.assign(span.attributes, {
        "loopguard.usage.input_tokens": event.usage.input_tokens,
        "loopguard.usage.output_tokens": event.usage.output_tokens,
        "loopguard.usage.cache_read_tokens": event.usage.cache_read_input_tokens ?? 0,
        "loopguard.usage.cache_write_tokens": event.usage.cache_creation_input_tokens ?? 0,
      });
    if (event.costUsd !== undefined) span.attributes["loopguard.cost_usd"] = event.costUsd;
    if (event.type === "context-compacted") {
      span.attributes["loopguard.context.tokens_after"] = event.tokensAfter;
      span.content = { output: event.summary };
    } else {
      span.status = "error";
      span.statusMessage = event.message;
      span.attributes["loopguard.error.kind"] = event.reason;
    }
    this.#end(done, span, at);
  }

  /** Ends a span (at the event's time unless told) and hands it out. */
  #end(done: Span[], span: Span | undefined, when: number): void {
    if (!span) return;
    span.endTime = Math.max(span.startTime, when);
    if (span.status === "unset") span.status = "ok";
    done.push(span);
  }

  #runStart(event: StoredEvent & { type: "run-start" }, at: number): void {
    const parent = event.parent;
    if (parent) {
      // One trace for the tree: the child's spans are in its root's trace, under the call.
      this.#traceId = traceIdOf(parent.rootRunId);
      this.#parentSpanId = this.#options.parentSpanId ?? toolSpanIdOf(parent.runId, parent.callId);
    }
    const run = this.#span("run", "run", `invoke_agent ${event.agentId}`, at);
    if (parent)
      Object.assign(run.attributes, {
        "loopguard.parent_run_id": parent.runId,
        "loopguard.parent_call_id": parent.callId,
        "loopguard.root_run_id": parent.rootRunId,
        "loopguard.depth": parent.depth,
      });
    Object.assign(run.attributes, {
      "loopguard.agent_id": event.agentId,
      "loopguard.model": event.model,
      "loopguard.policy_digest": event.policyDigest,
      "loopguard.tool_digest": event.toolDigest,
    });
    if (event.budget.maxUsd !== undefined)
      run.attributes["loopguard.budget.max_usd"] = event.budget.maxUsd;
    if (event.budget.maxSteps !== undefined)
      run.attributes["loopguard.budget.max_steps"] = event.budget.maxSteps;
    if (event.queueWaitMs !== undefined)
      run.attributes["loopguard.queue_wait_ms"] = event.queueWaitMs;
    run.content = { input: event.task };
    this.#run = run;
  }

  #runResume(
    event: StoredEvent & { type: "run-resume" },
    at: number,
    done: Span[],
    before: number,
  ): void {
    // Each process that advances the run gets its own root span: the spans left open by
    // the previous one (it crashed, paused or parked) end where its log ends. A span is
    // never emitted twice, so backends see no duplicate ids.
    for (const span of this.#tools.values()) this.#end(done, span, before);
    this.#tools.clear();
    this.#end(done, this.#model, before);
    this.#model = undefined;
    this.#end(done, this.#compaction, before);
    this.#compaction = undefined;
    this.#end(done, this.#step, before);
    this.#step = undefined;
    const previous = this.#run;
    this.#end(done, previous, before);
    this.#session = `:resume:${event.seq}`;
    const run = this.#span("run", "run", previous?.name ?? "invoke_agent", at);
    Object.assign(run.attributes, {
      ...(previous?.attributes ?? {}),
      "loopguard.resumed_from_seq": event.fromSeq,
    });
    this.#run = run;
  }

  #modelRequest(
    event: StoredEvent & { type: "model-request" },
    at: number,
    done: Span[],
    conversation: readonly Message[] | undefined,
  ): void {
    this.#end(done, this.#step, at);
    this.#step = this.#span("step", `step:${event.step}`, `step ${event.step}`, at, this.#run);
    this.#step.attributes["loopguard.step"] = event.step;
    const model = this.#span(
      "model",
      `model:${event.step}`,
      `chat ${this.#run?.attributes["loopguard.model"] ?? "model"}`,
      at,
      this.#step,
    );
    if (conversation) {
      model.content = { input: conversation.slice(this.#sent) };
      this.#sent = conversation.length;
    }
    Object.assign(model.attributes, {
      "loopguard.model": String(this.#run?.attributes["loopguard.model"] ?? ""),
      "loopguard.step": event.step,
      "loopguard.request.max_tokens": event.maxTokens,
      "loopguard.estimate_usd": event.estimateUsd,
      "loopguard.retries": 0,
    });
    this.#model = model;
  }

  #modelOutcome(
    event: StoredEvent & { type: "model-retry" | "model-response" | "model-error" },
    at: number,
    done: Span[],
  ): void {
    switch (event.type) {
      case "model-retry": {
        // A retry during a compaction call belongs to the compaction's span.
        const retried = this.#compaction ?? this.#model;
        if (retried) {
          retried.attributes["loopguard.retries"] = event.attempt;
          retried.events.push({
            name: "model.retry",
            time: at,
            attributes: {
              "loopguard.attempt": event.attempt,
              "loopguard.error.kind": event.kind,
              "loopguard.wait_ms": event.waitMs,
              ...(event.status ? { "http.status": event.status } : {}),
            },
          });
        }
        break;
      }
      case "model-response": {
        const model = this.#model;
        if (model) {
          const usage = event.response.usage;
          Object.assign(model.attributes, {
            "loopguard.response.id": event.response.id,
            "loopguard.response.model": event.response.model,
            "loopguard.stop_reason": event.response.stop_reason ?? "unknown",
            "loopguard.usage.input_tokens": usage.input_tokens,
            "loopguard.usage.output_tokens": usage.output_tokens,
            "loopguard.usage.cache_read_tokens": usage.cache_read_input_tokens ?? 0,
            "loopguard.usage.cache_write_tokens": usage.cache_creation_input_tokens ?? 0,
            "loopguard.cost_usd": event.costUsd,
            "loopguard.latency_ms": event.latencyMs,
            "loopguard.attempts": event.attempts,
            "loopguard.stream": event.streamed === true,
            ...(event.firstChunkMs !== undefined
              ? { "loopguard.time_to_first_chunk_ms": event.firstChunkMs }
              : {}),
          });
          model.content = { ...model.content, output: event.response.content };
          this.#end(done, model, at);
          this.#model = undefined;
        }
        for (const block of event.response.content) {
          if (block.type === "tool_use") this.#toolUses.set(block.id, block);
        }
        break;
      }
      case "model-error": {
        if (this.#model) {
          this.#model.status = "error";
          this.#model.statusMessage = event.message;
          this.#model.attributes["loopguard.error.kind"] = event.kind;
          this.#end(done, this.#model, at);
          this.#model = undefined;
        }
        break;
      }
    }
  }

  #toolProgress(
    event: StoredEvent & { type: "tool-call-intent" | "approval-request" | "approval-decision" },
    at: number,
  ): void {
    switch (event.type) {
      case "tool-call-intent": {
        const span = this.#toolSpan(event.toolUseId, event.tool, at);
        span.attributes["loopguard.decision"] = event.decision.passed.join(" ");
        span.attributes["loopguard.idempotency_key"] = event.idempotencyKey;
        if (event.costUsd) span.attributes["loopguard.tool.cost_usd"] = event.costUsd;
        span.events.push({
          name: "gate.decision",
          time: at,
          attributes: { "loopguard.outcome": "allow", "loopguard.passed": event.decision.passed },
        });
        span.content = { input: event.args };
        break;
      }
      case "approval-request": {
        const span = this.#toolSpan(event.toolUseId, event.tool, at);
        span.events.push({
          name: "approval.request",
          time: at,
          attributes: { "loopguard.reason": event.reason, "loopguard.request_id": event.requestId },
        });
        break;
      }
      case "approval-decision": {
        const span = this.#tools.get(event.toolUseId);
        span?.events.push({
          name: "approval.decision",
          time: at,
          attributes: {
            "loopguard.decision": event.decision,
            ...(event.approver ? { "loopguard.approver": event.approver } : {}),
          },
        });
        break;
      }
    }
  }

  #toolEnd(
    event: StoredEvent & { type: "tool-call-refusal" | "tool-call-result" },
    at: number,
    done: Span[],
  ): void {
    switch (event.type) {
      case "tool-call-refusal": {
        const span = this.#toolSpan(event.toolUseId, event.tool, at);
        span.status = "error";
        span.statusMessage = event.decision.message ?? "refused";
        Object.assign(span.attributes, {
          "loopguard.blocked": true,
          "loopguard.block.reason": event.decision.reason ?? "refused",
          "loopguard.decision": [
            ...event.decision.passed,
            `${event.decision.refusedAt ?? "?"}✗`,
          ].join(" "),
        });
        span.events.push({
          name: "gate.decision",
          time: at,
          attributes: {
            "loopguard.outcome": "deny",
            "loopguard.refused_at": event.decision.refusedAt ?? "",
            "loopguard.reason": event.decision.reason ?? "",
            "loopguard.passed": event.decision.passed,
            ...(event.decision.halted ? { "loopguard.halted": true } : {}),
          },
        });
        span.content = { output: event.content };
        this.#end(done, span, at);
        this.#tools.delete(event.toolUseId);
        break;
      }
      case "tool-call-result": {
        const span = this.#toolSpan(event.toolUseId, event.tool, at);
        Object.assign(span.attributes, {
          "loopguard.duration_ms": event.durationMs,
          "loopguard.attempts": event.attempts,
        });
        if (event.isError) {
          span.status = "error";
          span.statusMessage = event.errorKind ?? "tool error";
          span.attributes["loopguard.error.kind"] = event.errorKind ?? "tool_error";
        }
        if (event.cut) {
          // The model saw a cut output: how long it was and the digest that names it.
          span.attributes["loopguard.output.chars"] = event.cut.chars;
          span.attributes["loopguard.output.removed_chars"] = event.cut.removedChars;
          span.attributes["loopguard.output.sha256"] = event.cut.sha256;
        }
        if (event.scan) {
          span.attributes["loopguard.injection.verdict"] = event.scan.verdict;
          span.attributes["loopguard.injection.score"] = event.scan.score;
          if (event.scan.verdict !== "clean") {
            span.events.push({
              name: "injection.flagged",
              time: at,
              attributes: {
                "loopguard.injection.verdict": event.scan.verdict,
                "loopguard.injection.rules": event.scan.rules,
              },
            });
          }
        }
        span.content = { ...span.content, output: event.content };
        this.#end(done, span, at);
        this.#tools.delete(event.toolUseId);
        break;
      }
    }
  }

  #runOutcome(
    event: StoredEvent & { type: "run-halt" | "run-end" },
    at: number,
    done: Span[],
  ): void {
    switch (event.type) {
      case "run-halt": {
        if (this.#run) {
          this.#run.attributes["loopguard.halted"] = true;
          this.#run.attributes["loopguard.halt_reason"] = event.reason;
          this.#run.events.push({
            name: "run.halt",
            time: at,
            attributes: { "loopguard.reason": event.reason, "loopguard.source": event.source },
          });
        }
        break;
      }
      case "run-end": {
        for (const span of this.#tools.values()) this.#end(done, span, at);
        this.#tools.clear();
        if (this.#model) this.#end(done, this.#model, at);
        this.#model = undefined;
        this.#end(done, this.#compaction, at);
        this.#compaction = undefined;
        this.#end(done, this.#step, at);
        this.#step = undefined;
        const run = this.#run;
        if (run) {
          Object.assign(run.attributes, {
            "loopguard.status": event.status,
            "loopguard.why": event.why,
          });
          if (event.limit) run.attributes["loopguard.limit"] = event.limit;
          if (event.status === "failed") {
            run.status = "error";
            run.statusMessage = event.error ?? event.why;
          }
          run.content = { ...run.content, output: event.answer };
          this.#end(done, run, at);
          this.#run = undefined;
        }
        break;
      }
    }
  }

  /** Ends every open span at the last event's time (for a run that is parked or still going). */
  finish(): Span[] {
    const open = [...this.#tools.values(), this.#model, this.#step, this.#run].filter(
      (span): span is Span => span !== undefined,
    );
    for (const span of open) span.endTime = Math.max(span.startTime, this.#lastAt);
    this.#tools.clear();
    this.#model = this.#step = this.#run = undefined;
    return open;
  }

  /** A delegated call's child run: named on the call's span, its start, park and end as events. */
  #childProgress(
    event: StoredEvent & { type: "child-run-start" | "child-run-wait" | "child-run-end" },
    at: number,
  ): void {
    const tool =
      event.type === "child-run-start"
        ? event.tool
        : (this.#toolUses.get(event.callId)?.name ?? "tool");
    const span = this.#toolSpan(event.callId, tool, at);
    span.attributes["loopguard.child_run_id"] = event.childRunId;
    const attributes: Record<string, AttributeValue> = {
      "loopguard.child_run_id": event.childRunId,
    };
    if (event.type === "child-run-start") {
      span.attributes["loopguard.child_agent_id"] = event.agentId;
      attributes["loopguard.depth"] = event.depth;
    } else if (event.type === "child-run-wait") attributes["loopguard.status"] = event.status;
    else {
      attributes["loopguard.status"] = event.status;
      attributes["loopguard.cost_usd"] = event.costUsd;
      span.attributes["loopguard.child_cost_usd"] = event.costUsd;
    }
    span.events.push({ name: event.type.replaceAll("-", "."), time: at, attributes });
  }

  #toolSpan(toolUseId: string, tool: string, at: number): Span {
    let span = this.#tools.get(toolUseId);
    if (!span) {
      span = this.#span(
        "tool",
        `tool:${toolUseId}`,
        `execute_tool ${tool}`,
        at,
        this.#step ?? this.#run,
      );
      Object.assign(span.attributes, {
        "loopguard.tool.name": tool,
        "loopguard.tool.call_id": toolUseId,
      });
      this.#tools.set(toolUseId, span);
    }
    return span;
  }
}

/** Builds every span of a stored run. */
export function spansFromEvents(events: readonly StoredEvent[]): Span[] {
  const first = events[0];
  if (!first || first.type !== "run-start") return [];
  const builder = new SpanBuilder(first.runId);
  const fold = new RunFold(first, `run ${first.runId}`);
  const spans = builder.push(first, fold.messages);
  for (let index = 1; index < events.length; index += 1) {
    const event = events[index]!;
    fold.apply(event);
    spans.push(...builder.push(event, fold.messages));
  }
  return [...spans, ...builder.finish()];
}
