import type {
  CanUseTool,
  HookCallback,
  HookJSONOutput,
  PermissionResult,
} from "@anthropic-ai/claude-agent-sdk";
import {
  type DecisionRecord,
  type Gate,
  type GuardedTool,
  guardTool,
  type RunHandle,
  type ScanResult,
  type ToolCall,
  ToolError,
} from "@loopguard/core";
import { digestOf, formatToolOutput, judgeCall } from "@loopguard/core/plugin";
import type { LoopguardHooksOptions } from "./loopguard-hooks-options.js";
import {
  askApprover,
  deferred,
  flaggedNote,
  passThroughTool,
  refusalText,
  sdkExecutedTool,
  type TrackedCall,
} from "./sdk-calls.js";

/** The pipeline's answer for one call, kept so `canUseTool` does not judge a call twice. */
type Verdict =
  | { type: "allow" }
  | { type: "deny"; text: string; record: DecisionRecord }
  | { type: "defer"; message: string };

/** Enters the run's async context for one piece of work (the hooks run outside it). */
export type EnterRun = <T>(fn: () => Promise<T>) => Promise<T>;

/** What a hook session is built from: the checked options, the gates in order and the run. */
export interface HookSessionParts {
  options: LoopguardHooksOptions;
  gates: readonly Gate[];
  haltOn: readonly string[];
  sensitive: ReadonlySet<string>;
  run: RunHandle;
  enter: EnterRun;
  onError: (error: unknown, where: string) => void;
}

/**
 * The state of one `loopguardHooks`: the calls the PreToolUse hook started (each a guarded call
 * whose tool is the SDK's execution), the verdicts `canUseTool` gave alone, and the hooks and
 * permission callback that read them.
 */
export class HookSession {
  readonly #parts: HookSessionParts;
  readonly #verdicts = new Map<string, Promise<Verdict>>();
  readonly #tracked = new Map<string, TrackedCall>();
  readonly #guardedTools = new Map<string, GuardedTool<Record<string, unknown>, unknown>>();
  readonly #timeoutMs: number;

  constructor(parts: HookSessionParts) {
    this.#parts = parts;
    this.#timeoutMs = parts.options.timeoutMs ?? 600_000;
  }

  /** `PreToolUse`: starts the guarded call and answers once it is admitted, asks or ends. */
  readonly preToolUse: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== "PreToolUse") return {};
    const id = input.tool_use_id ?? toolUseId ?? "";
    const call = this.#start(input.tool_name, input.tool_input, id);
    const first = await Promise.race([
      call.admitted.promise.then(() => ({ type: "admitted" as const })),
      call.asked.promise.then((message) => ({ type: "asked" as const, message })),
      call.outcome.then((outcome) => ({ type: "settled" as const, outcome })),
    ]);
    if (first.type === "admitted") return {};
    if (first.type === "asked")
      return {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "ask",
          permissionDecisionReason: first.message,
        },
      };
    const outcome = first.outcome;
    if (outcome.type === "refused") return this.#denyOutput(refusalText(outcome));
    if (outcome.type === "error")
      return this.#denyOutput(
        `[claude-agent-sdk] loopguard could not admit the call (${outcome.kind}): ${outcome.message}`,
      );
    return {};
  };

  /** `PostToolUse`: hands the output to the guarded call (scan, envelope, log). */
  readonly postToolUse: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== "PostToolUse") return {};
    const id = input.tool_use_id ?? toolUseId ?? "";
    const call = this.#tracked.get(id);
    // A call the PreToolUse hook never saw (hooks installed partly): scan and record it alone.
    if (!call) return this.#scanAlone(input.tool_name, id, input.tool_response);
    // The tool ran, so the SDK's permission flow let it: an ask waiting on it is approved.
    call.permission.resolve("approve");
    call.execution.resolve(input.tool_response);
    const outcome = await call.outcome;
    if (outcome.type !== "ok") return {};
    if (outcome.content !== formatToolOutput(input.tool_response))
      return {
        hookSpecificOutput: { hookEventName: "PostToolUse", updatedToolOutput: outcome.content },
      };
    if (outcome.scan && outcome.scan.verdict !== "clean")
      return {
        hookSpecificOutput: {
          hookEventName: "PostToolUse",
          additionalContext: flaggedNote(input.tool_name, outcome.scan.verdict),
        },
      };
    return {};
  };

  /** `PostToolUseFailure`: the call ran (so an ask was approved) and failed. */
  readonly postToolUseFailure: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== "PostToolUseFailure") return {};
    return this.#endTracked(
      input.tool_use_id ?? toolUseId ?? "",
      "approve",
      `[claude-agent-sdk] ${input.tool_name} failed: ${String(input.error).slice(0, 500)}`,
    );
  };

  /** `PermissionDenied`: the SDK's permissions refused the call. */
  readonly permissionDenied: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== "PermissionDenied") return {};
    return this.#endTracked(
      input.tool_use_id ?? toolUseId ?? "",
      "deny",
      `[claude-agent-sdk] the SDK's permissions denied ${input.tool_name}: ${input.reason}`,
    );
  };

  /** The permission callback: the answer the PreToolUse hook gave, or a judgement of its own. */
  readonly canUseTool: CanUseTool = async (
    toolName,
    input,
    callOptions,
  ): Promise<PermissionResult> => {
    const call = this.#tracked.get(callOptions.toolUseID);
    if (call) return this.#answerTracked(call, toolName, input, callOptions);
    // No PreToolUse hook saw it (only canUseTool is installed): judge it alone.
    const verdict = await this.#judge(toolName, input, callOptions.toolUseID, false);
    if (verdict.type === "allow") return { behavior: "allow", updatedInput: input };
    if (verdict.type === "defer")
      return {
        behavior: "deny",
        message: `Refused by loopguard (no_approver): ${verdict.message}`,
      };
    return {
      behavior: "deny",
      message: verdict.text,
      ...(this.#parts.run.halted ? { interrupt: true } : {}),
    };
  };

  /** Ends the calls still waiting on the SDK: they are logged as failed. */
  close(): void {
    for (const call of this.#tracked.values()) {
      call.permission.resolve("deny");
      call.execution.reject(
        new ToolError("[claude-agent-sdk] the hooks were closed before the call ended"),
      );
    }
  }

  /**
   * The PreToolUse hook judged this call. An ask it handed to the SDK lands here when the app's
   * permission callback is this one: the host's own callback answers it, or it is refused.
   */
  async #answerTracked(
    call: TrackedCall,
    toolName: string,
    input: Record<string, unknown>,
    callOptions: Parameters<CanUseTool>[2],
  ): Promise<PermissionResult> {
    const asked = await Promise.race([
      call.asked.promise.then(() => true),
      call.admitted.promise.then(() => false),
    ]);
    if (!asked) return { behavior: "allow", updatedInput: input };
    const halted = () => (this.#parts.run.halted ? { interrupt: true } : {});
    if (this.#parts.options.canUseTool) {
      let answer: PermissionResult;
      try {
        answer = (await this.#parts.options.canUseTool(toolName, input, callOptions)) ?? {
          behavior: "deny",
          message: "[claude-agent-sdk] the permission callback gave no answer",
        };
      } catch (error) {
        this.#parts.onError(error, "canUseTool");
        answer = {
          behavior: "deny",
          message: "[claude-agent-sdk] the permission callback failed",
        };
      }
      call.permission.resolve(answer.behavior === "allow" ? "approve" : "deny");
      if (answer.behavior === "allow") return answer;
      await call.outcome;
      return { ...answer, ...halted() };
    }
    call.permission.resolve("deny");
    const outcome = await call.outcome;
    return {
      behavior: "deny",
      message:
        outcome.type === "refused"
          ? refusalText(outcome)
          : "Refused by loopguard (approval_no_approver).",
      ...halted(),
    };
  }

  /** A call's verdict when only `canUseTool` sees it, judged once per tool use. */
  #judge(
    toolName: string,
    input: unknown,
    toolUseId: string,
    deferAsks: boolean,
  ): Promise<Verdict> {
    const known = this.#verdicts.get(toolUseId);
    if (known) return known;
    const verdict = this.#parts.enter(() => this.#judgeOnce(toolName, input, toolUseId, deferAsks));
    this.#verdicts.set(toolUseId, verdict);
    // Keep the map small: a decision is read at most twice (the hook, then canUseTool).
    if (this.#verdicts.size > 1_000) this.#verdicts.delete(this.#verdicts.keys().next().value!);
    return verdict;
  }

  async #judgeOnce(
    toolName: string,
    input: unknown,
    toolUseId: string,
    deferAsks: boolean,
  ): Promise<Verdict> {
    const theRun = this.#parts.run;
    const options = this.#parts.options;
    const args =
      input !== null && typeof input === "object" && !Array.isArray(input)
        ? (input as Record<string, unknown>)
        : {};
    const call: ToolCall = {
      tool: toolName,
      args,
      toolUseId,
      idempotencyKey: `${theRun.runId}:${toolUseId}`,
      sensitive: this.#parts.sensitive.has(toolName),
      idempotent: false,
      run: theRun,
    };
    let deferred: string | undefined;
    const judgement = await judgeCall({
      call,
      tool: passThroughTool(toolName, call.sensitive),
      gates: this.#parts.gates,
      haltOn: this.#parts.haltOn,
      approve: async (ask) => {
        if (options.approver)
          return askApprover(options, call, ask.reason, ask.message, this.#parts.onError);
        if (deferAsks) {
          deferred = ask.message;
          return { type: "park" };
        }
        return { type: "deny", why: "no_approver" };
      },
      onError: this.#parts.onError,
    });
    if (judgement.type === "allow") {
      theRun.calls.push({ tool: toolName, argsDigest: digestOf(judgement.args), toolUseId });
      return { type: "allow" };
    }
    if (judgement.type === "park" && deferred !== undefined)
      return { type: "defer", message: deferred };
    const record = judgement.record;
    theRun.refusals.push({
      tool: toolName,
      toolUseId,
      reason: record.reason ?? "refused",
      decision: record,
    });
    const hints =
      record.fixHints && record.fixHints.length > 0
        ? `\nWhat to do instead:\n- ${record.fixHints.join("\n- ")}`
        : "";
    return {
      type: "deny",
      text: `Refused by loopguard (${record.reason ?? "refused"}): ${record.message ?? ""}${hints}`,
      record,
    };
  }

  /**
   * Each call the PreToolUse hook admits is a guarded call of its own (guardTool), whose tool
   * is the SDK's execution: it starts when the pipeline admits the call and ends with the
   * output PostToolUse hands over. So the call takes the guard path whole: inside a logged
   * withRun it is logged (intent, result, approvals), budgets and durable asks apply, and the
   * output is scanned on the way back.
   */
  #guardedOf(toolName: string): GuardedTool<Record<string, unknown>, unknown> {
    const options = this.#parts.options;
    let guarded = this.#guardedTools.get(toolName);
    if (!guarded) {
      const tool = sdkExecutedTool(
        toolName,
        this.#parts.sensitive.has(toolName),
        this.#timeoutMs,
        this.#tracked,
      );
      guarded = guardTool(tool, {
        gates: this.#parts.gates,
        haltOn: this.#parts.haltOn,
        ...(options.scanner ? { scanner: options.scanner } : {}),
        ...(options.envelope ? { envelope: options.envelope } : {}),
        approval: { timeoutMs: options.approvalTimeoutMs ?? 300_000 },
        // Without an approver of its own, an ask waits for the SDK's permission flow: the
        // PreToolUse hook answers "ask", and the call's fate (it ran, or it was denied) answers.
        approver:
          options.approver ??
          ((request) => {
            const call = this.#tracked.get(request.toolUseId);
            if (!call) return "deny";
            call.asked.resolve(request.message);
            return call.permission.promise;
          }),
        onError: this.#parts.onError,
      });
      this.#guardedTools.set(toolName, guarded);
    }
    return guarded;
  }

  #start(toolName: string, input: unknown, toolUseId: string): TrackedCall {
    const call: TrackedCall = {
      admitted: deferred<void>(),
      execution: deferred<unknown>(),
      asked: deferred<string>(),
      permission: deferred<"approve" | "deny">(),
      outcome: Promise.resolve(undefined as never),
    };
    this.#tracked.set(toolUseId, call);
    const args =
      input !== null && typeof input === "object" && !Array.isArray(input)
        ? (input as Record<string, unknown>)
        : {};
    const guarded = this.#guardedOf(toolName);
    call.outcome = this.#parts.enter(() => guarded(args, { toolUseId }));
    void call.outcome.finally(() => {
      this.#tracked.delete(toolUseId);
    });
    return call;
  }

  #denyOutput(text: string): HookJSONOutput {
    const output: HookJSONOutput = {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: text,
      },
    };
    return this.#parts.run.halted
      ? {
          ...output,
          continue: false,
          stopReason: `loopguard halted the run (${this.#parts.run.haltReason})`,
        }
      : output;
  }

  /**
   * Ends a tracked call the SDK ended without a result: answers a pending ask with `permission`,
   * fails the execution with `message` and waits until the pipeline has recorded it.
   */
  async #endTracked(id: string, permission: "approve" | "deny", message: string) {
    const call = this.#tracked.get(id);
    if (!call) return {};
    call.permission.resolve(permission);
    call.execution.reject(new ToolError(message));
    await call.outcome;
    return {};
  }

  async #scanAlone(toolName: string, id: string, response: unknown): Promise<HookJSONOutput> {
    const options = this.#parts.options;
    const text = formatToolOutput(response);
    const provenance = {
      source: "tool_output" as const,
      tool: toolName,
      toolUseId: id,
      runId: this.#parts.run.runId,
    };
    let scan: ScanResult | undefined;
    if (options.scanner) {
      try {
        scan = await options.scanner.scan(text, provenance);
      } catch (error) {
        this.#parts.onError(error, `scanner ${options.scanner.name}`);
        scan = {
          verdict: "suspicious",
          score: 0.5,
          findings: [{ rule: "scanner_error", start: 0, end: 0 }],
        };
      }
    }
    const shown = options.envelope ? options.envelope(text, provenance, scan) : text;
    this.#parts.run.outputs.push({
      tool: toolName,
      toolUseId: id,
      text: shown,
      ...(scan
        ? {
            scan: {
              verdict: scan.verdict,
              score: scan.score,
              rules: [...new Set(scan.findings.map((finding) => finding.rule))],
            },
          }
        : {}),
    });
    if (shown !== text)
      return { hookSpecificOutput: { hookEventName: "PostToolUse", updatedToolOutput: shown } };
    if (scan && scan.verdict !== "clean")
      return {
        hookSpecificOutput: {
          hookEventName: "PostToolUse",
          additionalContext: flaggedNote(toolName, scan.verdict),
        },
      };
    return {};
  }
}
