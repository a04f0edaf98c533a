import { AsyncResource } from "node:async_hooks";
import {
  type Approver,
  currentRun,
  type Gate,
  guardTool,
  type Tool as LoopguardTool,
  type RunContextInput,
  type RunHandle,
  type ToolCall,
  withRun,
} from "@loopguard/core";
import { formatToolOutput, type SharedGuardOptions } from "@loopguard/core/plugin";
import {
  asSchema,
  type InferToolInput,
  type InferToolOutput,
  jsonSchema,
  type ModelMessage,
  type Tool,
  type ToolExecutionOptions,
  type ToolSet,
} from "ai";
import { GuardedToolError, GuardToolsError } from "./errors.js";

/** What a refused call returns to the model: a tool result it can read and act on. */
export interface ToolRefusal {
  /** Marks the output as a loopguard refusal (it survives JSON, unlike a class or a symbol). */
  loopguard: "refused";
  /** The stable reason code, e.g. `policy_denied`, `run_loop`, `approval_pending`. */
  reason: string;
  message: string;
  /** What the model should do instead. */
  fixHints: string[];
}

/** Per-tool flags the AI SDK's tools do not carry. */
export interface GuardedToolFlags {
  /** Guarded by the taint gate: arguments must not carry values from flagged text. */
  sensitive?: boolean;
  /** Safe to retry automatically on a transient failure. Default `false`. */
  idempotent?: boolean;
  /** Milliseconds before the call is abandoned. Default 30 000. */
  timeoutMs?: number;
  /** Whose text the tool returns: `trusted` for internal lookups, `untrusted` (the default) for anything a third party can write. */
  trust?: "trusted" | "untrusted";
}

/** Options of `guardTools`. */
export interface GuardToolsOptions extends SharedGuardOptions {
  /**
   * Who answers a gate's `ask`. `"ai-sdk"`: the tool gets `needsApproval`, so `generateText`
   * and `streamText` stop with a `tool-approval-request` (and UI messages carry the approval
   * parts); the call runs once the app answers with an approved `tool-approval-response`.
   * `"approver"` (the default): loopguard's `approver` answers inline; without one, asks are
   * refused.
   */
  approval?: "ai-sdk" | "approver";
  /** Flags per tool name (sensitive, idempotent, timeout). */
  tools?: Record<string, GuardedToolFlags>;
  /**
   * The run opened for calls made outside any `withRun`: one run per guarded tool set, so loop
   * detection and taint still see the history. Default `{ agentId: "ai-sdk" }`.
   */
  run?: RunContextInput;
}

/** The tool set `guardTools` returns: the same names and input types; outputs may be refusals. */
export type GuardedToolSet<TOOLS extends ToolSet> = {
  [K in keyof TOOLS]: TOOLS[K] extends Tool<any, any>
    ? Tool<InferToolInput<TOOLS[K]>, InferToolOutput<TOOLS[K]> | ToolRefusal>
    : never;
};

/** What `toModelOutput` returns (the AI SDK's `ToolResultOutput`, which `ai` does not re-export). */
type ToolResultOutput = Awaited<ReturnType<NonNullable<Tool["toModelOutput"]>>>;

/** Whether a tool output is a loopguard refusal. */
export function isToolRefusal(output: unknown): output is ToolRefusal {
  return (
    output !== null &&
    typeof output === "object" &&
    (output as Record<string, unknown>).loopguard === "refused" &&
    typeof (output as Record<string, unknown>).reason === "string"
  );
}

/** How many enveloped outputs are kept for `toModelOutput` before the oldest are dropped. */
const maxKeptOutputs = 1_000;

/**
 * Puts every tool of an AI SDK tool set (or a list of loopguard tools) behind loopguard's gate
 * pipeline. The result is an AI SDK tool set with the same names and input schemas; each
 * `execute` runs under the caller's `withRun` (or a run this tool set opens), uses the AI SDK's
 * `toolCallId` as the tool-use id (so the idempotency key is `runId:toolCallId`), and returns a
 * refusal as a tool result the model reads (message and fix hints).
 *
 * @example
 * const result = await withRun({ agentId: "support" }, () =>
 *   generateText({ model, tools: guardTools(tools, { gates: [policy(rules), runGuard()] }), prompt }),
 * );
 */
export function guardTools<TOOLS extends ToolSet>(
  tools: TOOLS,
  options?: GuardToolsOptions,
): GuardedToolSet<TOOLS>;
export function guardTools(
  tools: readonly LoopguardTool<any, any>[],
  options?: GuardToolsOptions,
): Record<string, Tool<Record<string, unknown>, unknown>>;
export function guardTools(
  tools: ToolSet | readonly LoopguardTool<any, any>[],
  options: GuardToolsOptions = {},
): Record<string, Tool<any, any>> {
  if (options === null || typeof options !== "object") {
    throw new GuardToolsError(
      "[ai-sdk] guardTools(tools, options): options must be an object such as { gates: [...] }",
    );
  }
  if (
    options.approval !== undefined &&
    options.approval !== "ai-sdk" &&
    options.approval !== "approver"
  ) {
    throw new GuardToolsError(
      `[ai-sdk] guardTools: approval must be "ai-sdk" or "approver", got ${JSON.stringify(options.approval)}`,
    );
  }
  const entries: [string, unknown][] = Array.isArray(tools)
    ? tools.map((item, index) => {
        if (!isLoopguardTool(item))
          throw new GuardToolsError(
            `[ai-sdk] guardTools: tools[${index}] is not a loopguard tool (make it with tool({ ... }) from @loopguard/core), or pass an AI SDK tool set object instead of an array`,
          );
        return [item.name, item];
      })
    : tools !== null && typeof tools === "object"
      ? Object.entries(tools)
      : [];
  if (entries.length === 0 && !(Array.isArray(tools) || (tools && typeof tools === "object"))) {
    throw new GuardToolsError(
      "[ai-sdk] guardTools(tools): tools must be an AI SDK tool set ({ name: tool({ ... }) }) or an array of loopguard tools",
    );
  }
  const names = new Set<string>();
  for (const [name] of entries) {
    if (names.has(name))
      throw new GuardToolsError(`[ai-sdk] guardTools: two tools are named "${name}"`);
    names.add(name);
  }
  for (const name of Object.keys(options.tools ?? {})) {
    if (!names.has(name))
      throw new GuardToolsError(
        `[ai-sdk] guardTools: options.tools names "${name}", which is not in the tool set (${[...names].join(", ") || "empty"})`,
      );
  }

  const logged = Object.keys(options.run ?? {}).filter((key) => runLogKeys.includes(key));
  if (logged.length > 0)
    throw new GuardToolsError(
      `[ai-sdk] guardTools: options.run says who is running (runId, agentId, roles, task, attributes), not ${logged.join(", ")}; to log the run, call generateText inside withRun({ ${logged.join(", ")}, ... })`,
    );
  const enterOwnRun = ownRun(options.run);
  const out: Record<string, Tool<any, any>> = {};
  for (const [name, item] of entries) {
    out[name] = isLoopguardTool(item)
      ? guardOne(name, fromLoopguardTool(item), options, enterOwnRun)
      : guardOne(
          name,
          fromAiSdkTool(name, item, options.tools?.[name] ?? {}),
          options,
          enterOwnRun,
        );
  }
  return out;
}

/** What one guarded tool needs, whichever kind it came from. */
interface Prepared {
  tool: LoopguardTool<Record<string, unknown>, unknown>;
  /** The AI SDK tool definition to copy (schema, description, provider options, ...). */
  base: Record<string, unknown>;
  /** Per call, the AI SDK's execution options (set before the pipeline, read by `run`). */
  pending: Map<string, ToolExecutionOptions>;
  originalNeedsApproval?: Tool["needsApproval"];
  originalToModelOutput?: Tool["toModelOutput"];
}

function guardOne(
  name: string,
  prepared: Prepared,
  options: GuardToolsOptions,
  enterOwnRun: <T>(fn: () => Promise<T>) => Promise<T>,
): Tool<any, any> {
  const { pending } = prepared;
  const aiSdkApproval = options.approval === "ai-sdk";
  const approver: Approver | undefined = aiSdkApproval
    ? (request, approverOptions) => {
        const execution = pending.get(request.toolUseId);
        if (execution && approvedInMessages(execution.messages, request.toolUseId))
          return "approve";
        if (options.approver) return options.approver(request, approverOptions);
        return { decision: "deny", note: "no approved tool-approval-response for this call" };
      }
    : options.approver;
  const guarded = guardTool(prepared.tool, {
    ...(options.gates ? { gates: options.gates } : {}),
    ...(options.scanner ? { scanner: options.scanner } : {}),
    ...(options.envelope ? { envelope: options.envelope } : {}),
    ...(approver ? { approver } : {}),
    ...(options.approvalTimeoutMs !== undefined
      ? { approvalTimeoutMs: options.approvalTimeoutMs }
      : {}),
    ...(options.haltOn ? { haltOn: options.haltOn } : {}),
    ...(options.breaker ? { breaker: options.breaker } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  // The model sees the scanned, enveloped text instead of the raw value; kept per call id
  // until the AI SDK asks for it in toModelOutput.
  const modelText = new Map<string, string>();

  const execute = async (input: unknown, execution: ToolExecutionOptions): Promise<unknown> => {
    const toolCallId = execution.toolCallId;
    pending.set(toolCallId, execution);
    try {
      const call = () =>
        guarded((input ?? {}) as Record<string, unknown>, {
          toolUseId: toolCallId,
          ...(execution.abortSignal ? { signal: execution.abortSignal } : {}),
        });
      const outcome = currentRun() ? await call() : await enterOwnRun(call);
      if (outcome.type === "refused") {
        const refusal: ToolRefusal = {
          loopguard: "refused",
          reason: outcome.reason,
          message: outcome.message,
          fixHints: outcome.fixHints,
        };
        return refusal;
      }
      if (outcome.type === "error") {
        throw new GuardedToolError(
          `[ai-sdk] tool "${name}" failed (${outcome.kind}): ${outcome.message}`,
          outcome.kind,
        );
      }
      if (outcome.content !== formatToolOutput(outcome.value)) {
        modelText.set(toolCallId, outcome.content);
        if (modelText.size > maxKeptOutputs) modelText.delete(modelText.keys().next().value!);
      }
      return outcome.value;
    } finally {
      pending.delete(toolCallId);
    }
  };

  const toModelOutput = async (part: {
    toolCallId: string;
    input: unknown;
    output: unknown;
  }): Promise<ToolResultOutput> => {
    if (isToolRefusal(part.output)) return { type: "error-text", value: refusalText(part.output) };
    const text = modelText.get(part.toolCallId);
    if (text !== undefined) {
      modelText.delete(part.toolCallId);
      return { type: "text", value: text };
    }
    if (prepared.originalToModelOutput) return prepared.originalToModelOutput(part as never);
    return typeof part.output === "string"
      ? { type: "text", value: part.output }
      : { type: "json", value: (part.output ?? null) as never };
  };

  const needsApproval =
    aiSdkApproval || prepared.originalNeedsApproval !== undefined
      ? async (
          input: unknown,
          approvalOptions: { toolCallId: string; messages: ModelMessage[] },
        ): Promise<boolean> => {
          const original = prepared.originalNeedsApproval;
          if (original === true) return true;
          if (typeof original === "function" && (await original(input as never, approvalOptions)))
            return true;
          if (!aiSdkApproval) return false;
          return probeAsk(options.gates ?? [], prepared.tool, input, approvalOptions.toolCallId);
        }
      : undefined;

  return {
    ...prepared.base,
    execute,
    toModelOutput,
    ...(needsApproval ? { needsApproval } : {}),
  } as unknown as Tool<any, any>;
}

/** The text a refused call shows the model. */
function refusalText(refusal: ToolRefusal): string {
  const hints =
    refusal.fixHints.length > 0 ? `\nWhat to do instead:\n- ${refusal.fixHints.join("\n- ")}` : "";
  return `Refused by loopguard (${refusal.reason}): ${refusal.message}${hints}`;
}

/**
 * Whether the gates up to step 2 (the kill switch and the policy, which decide asks) would
 * ask about this call. Only `check` is called, with no run state changed; a deny or an error
 * answers no, so `execute` refuses the call through the full pipeline with its real reason.
 */
async function probeAsk(
  gates: readonly Gate[],
  item: LoopguardTool<Record<string, unknown>, unknown>,
  input: unknown,
  toolCallId: string,
): Promise<boolean> {
  const run = currentRun();
  const call: ToolCall = {
    tool: item.name,
    args: (input ?? {}) as Record<string, unknown>,
    toolUseId: toolCallId,
    idempotencyKey: `${run?.runId ?? "no-run"}:${toolCallId}`,
    sensitive: item.sensitive,
    idempotent: item.idempotent,
    run,
  };
  for (const gate of gates) {
    if (gate.step !== "0" && gate.step !== "2") continue;
    try {
      const decision = await gate.check(call);
      if (decision?.type === "ask") return true;
      if (decision?.type === "deny") return false;
    } catch {
      return false;
    }
  }
  return false;
}

/** Whether the messages hold an approved `tool-approval-response` for this tool call. */
function approvedInMessages(
  messages: readonly ModelMessage[] | undefined,
  toolCallId: string,
): boolean {
  if (!messages) return false;
  const approvalIds = new Set<string>();
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    for (const part of message.content)
      if (part.type === "tool-approval-request" && part.toolCallId === toolCallId)
        approvalIds.add(part.approvalId);
  }
  if (approvalIds.size === 0) return false;
  for (const message of messages) {
    if (message.role !== "tool") continue;
    for (const part of message.content)
      if (part.type === "tool-approval-response" && approvalIds.has(part.approvalId))
        return part.approved === true;
  }
  return false;
}

function isLoopguardTool(value: unknown): value is LoopguardTool<any, any> {
  return (
    value !== null &&
    typeof value === "object" &&
    typeof (value as LoopguardTool).parse === "function" &&
    typeof (value as LoopguardTool).spec === "object" &&
    typeof (value as LoopguardTool).run === "function"
  );
}

function fromLoopguardTool(item: LoopguardTool<any, any>): Prepared {
  // No validate function: the pipeline's step 1 validates strictly and refuses with fix hints
  // the model can act on, instead of the AI SDK's generic invalid-input error.
  const inputSchema = jsonSchema(item.spec.input_schema as Parameters<typeof jsonSchema>[0]);
  return {
    tool: item,
    base: { description: item.description, inputSchema },
    pending: new Map(),
  };
}

function fromAiSdkTool(name: string, value: unknown, flags: GuardedToolFlags): Prepared {
  if (value === null || typeof value !== "object")
    throw new GuardToolsError(
      `[ai-sdk] guardTools: tools.${name} is not a tool (got ${typeof value}); make it with tool({ ... }) from "ai"`,
    );
  const original = value as Tool<any, any>;
  if (original.type === "provider")
    throw new GuardToolsError(
      `[ai-sdk] guardTools: tools.${name} is a provider-executed tool (${(original as { id?: string }).id ?? "provider"}); the provider runs it, so loopguard cannot gate it. Pass it to generateText beside the guarded set: { ...guardTools(mine), ${name} }`,
    );
  if (original.inputSchema === undefined || original.inputSchema === null)
    throw new GuardToolsError(
      `[ai-sdk] guardTools: tools.${name} has no inputSchema; give it one (z.object({ ... }) or jsonSchema({ type: "object", ... })) so the model knows its arguments and the gates can read them`,
    );
  if (typeof original.execute !== "function")
    throw new GuardToolsError(
      `[ai-sdk] guardTools: tools.${name} has no execute function, so there is no call to guard (the app answers it itself); keep it outside guardTools: { ...guardTools(mine), ${name} }`,
    );
  const timeoutMs = flags.timeoutMs ?? 30_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new GuardToolsError(
      `[ai-sdk] guardTools: options.tools.${name}.timeoutMs must be a positive number of milliseconds`,
    );
  let schema: Record<string, unknown> = { type: "object" };
  try {
    const json = asSchema(original.inputSchema).jsonSchema;
    if (json && typeof (json as PromiseLike<unknown>).then !== "function")
      schema = json as Record<string, unknown>;
  } catch (error) {
    throw new GuardToolsError(
      `[ai-sdk] guardTools: tools.${name}.inputSchema cannot be turned into JSON Schema (${(error as Error).message})`,
      { cause: error },
    );
  }
  const pending = new Map<string, ToolExecutionOptions>();
  const execute = original.execute.bind(original);
  const item: LoopguardTool<Record<string, unknown>, unknown> = {
    name,
    description: original.description ?? name,
    sensitive: flags.sensitive ?? false,
    idempotent: flags.idempotent ?? false,
    trust: flags.trust === "trusted" ? "trusted" : "untrusted",
    timeoutMs,
    costUsd: 0,
    spec: { name, description: original.description ?? name, input_schema: schema },
    // The AI SDK has validated the input against the tool's own schema before execute.
    parse: (args: unknown) =>
      args !== null && typeof args === "object" && !Array.isArray(args)
        ? { ok: true, value: args as Record<string, unknown> }
        : { ok: false, issues: ["(root): arguments must be an object"] },
    run: async (args, context) => {
      const execution = pending.get(context.toolUseId);
      const result = execute(args, {
        toolCallId: context.toolUseId,
        messages: execution?.messages ?? [],
        abortSignal: context.signal,
        ...(execution && "experimental_context" in execution
          ? { experimental_context: execution.experimental_context }
          : {}),
      });
      return lastOf(result);
    },
  };
  const {
    execute: _execute,
    needsApproval,
    toModelOutput,
    ...base
  } = original as Tool<any, any> & {
    execute: unknown;
  };
  return {
    tool: item,
    base,
    pending,
    ...(needsApproval !== undefined ? { originalNeedsApproval: needsApproval } : {}),
    ...(toModelOutput !== undefined ? { originalToModelOutput: toModelOutput } : {}),
  };
}

/** An execute may stream preliminary results as an async iterable; the last one is the result. */
async function lastOf(result: unknown): Promise<unknown> {
  if (result !== null && typeof result === "object" && Symbol.asyncIterator in result) {
    let last: unknown;
    for await (const value of result as AsyncIterable<unknown>) last = value;
    return last;
  }
  return result;
}

/** `withRun` options that make a logged run (opened asynchronously): not for the run a tool set opens itself. */
const runLogKeys = ["store", "exporters", "redact", "onEvent", "budget", "vault", "approval"];

/** Opens (once, lazily) the run used for calls made outside any `withRun`, and enters it. */
function ownRun(context: RunContextInput | undefined): <T>(fn: () => Promise<T>) => Promise<T> {
  let enter: (<T>(fn: () => Promise<T>) => Promise<T>) | undefined;
  return <T>(fn: () => Promise<T>): Promise<T> => {
    if (!enter) {
      void withRun(context ?? { agentId: "ai-sdk" }, (_run: RunHandle) => {
        // Binds the run's async context: later calls, from any caller, run inside this run.
        enter = AsyncResource.bind(<U>(thunk: () => Promise<U>): Promise<U> => thunk()) as <U>(
          thunk: () => Promise<U>,
        ) => Promise<U>;
      });
    }
    return enter!(fn);
  };
}
