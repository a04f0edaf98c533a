import * as v from "valibot";
import { type ChildCallSpec, runChildCall } from "./child-call.js";
import { type Delegation, delegationKey, delegationOf, type ParentCall } from "./delegation.js";
import { InvalidArgumentError, UnknownModelPriceError } from "./errors.js";
import type { Budget, RunStatus } from "./events.js";
import { canonicalJson, type JsonValue } from "./json.js";
import type { LoopContext } from "./loop-context.js";
import { type ModelPrice, priceOf } from "./pricing.js";
import { type ObjectSchema, type Tool, tool } from "./tool.js";

/** The input of an `asTool` tool that declares none: the task, in the parent model's words. */
export type DefaultChildInput = v.ObjectSchema<
  {
    readonly task: v.SchemaWithPipe<
      readonly [v.StringSchema<undefined>, v.DescriptionAction<string, string>]
    >;
  },
  undefined
>;

/** How another agent calls this one as a tool. */
export interface AsToolOptions<TSchema extends ObjectSchema = DefaultChildInput> {
  /** The tool's name in the parent (1 to 64 letters, digits, `_` or `-`). */
  name: string;
  /** What the agent does, for the parent's model. */
  description: string;
  /** The call's arguments (a valibot object schema). Default: `{ task: string }`. */
  input?: TSchema;
  /**
   * The child run's task from the call's arguments. Default: `task` when the input has it,
   * else the arguments as canonical JSON.
   */
  task?: (args: v.InferOutput<TSchema>) => string;
  /**
   * The child's own caps; each is further capped by its share of what the parent has left
   * when the call starts. Default: the child agent's `budget`.
   */
  budget?: Budget;
  /** The fraction (0, 1] of the parent's remaining USD and tokens the child may use. Default 1. */
  share?: number;
  /** Guarded by the parent's taint gate like any sensitive tool. Default `false`. */
  sensitive?: boolean;
}

/** Why a child run did not give an answer. */
export type ChildErrorCode = "child_failed" | "child_halted" | "child_budget" | "child_refused";

/**
 * What the parent's model reads (as JSON, in an error `tool_result`) when the child run did
 * not complete: it failed, was halted, ran out of budget, or was refused before it started.
 */
export interface ChildRunError {
  error: {
    code: ChildErrorCode;
    /** What happened, for the model (and the operator). */
    message: string;
    /** The child run, to inspect with `loopguard trace`. */
    childRunId: string;
    /** The child's final status, when it started. */
    status?: RunStatus;
  };
}

const defaultInput: DefaultChildInput = v.object({
  task: v.pipe(
    v.string(),
    v.description("The task for the agent, with everything it needs to know to do it."),
  ),
});

/**
 * Makes `child`'s tool for another agent's `tools` (the body of `agent.asTool`). Checks the
 * options (`[core]` errors naming the agent).
 */
export function asTool<TSchema extends ObjectSchema = DefaultChildInput>(
  child: LoopContext,
  agent: object,
  options: AsToolOptions<TSchema>,
): Tool<v.InferOutput<TSchema>, string | ChildRunError> {
  const agentId = child.config.agentId;
  const where = `[core] agent "${agentId}".asTool`;
  if (!options || typeof options !== "object")
    throw new InvalidArgumentError(
      `${where}(options): options must be an object with name and description`,
    );
  const share = options.share ?? 1;
  if (typeof share !== "number" || !(share > 0 && share <= 1))
    throw new InvalidArgumentError(
      `${where}({ name: ${JSON.stringify(options.name)} }): share must be a number in (0, 1] (the fraction of the parent's remaining budget the child may use), got ${JSON.stringify(options.share)}`,
    );
  const budget = checkBudget(options.budget ?? child.config.budget, where);
  if (options.task !== undefined && typeof options.task !== "function")
    throw new InvalidArgumentError(`${where}: task must be a function (args) => string`);
  const taskOf = options.task as ((args: unknown) => string) | undefined;
  const spec: ChildCallSpec = {
    tool: options.name,
    child,
    budget,
    share,
    task: (args: Record<string, JsonValue>) => {
      const task = taskOf
        ? taskOf(args)
        : typeof args.task === "string"
          ? args.task
          : canonicalJson(args);
      if (typeof task !== "string" || task.trim() === "")
        throw new InvalidArgumentError(
          `${where}: the task of tool "${options.name}" is empty; the child run needs a non-empty task`,
        );
      return task;
    },
  };
  const made = tool({
    name: options.name,
    description: options.description,
    input: (options.input ?? defaultInput) as TSchema,
    sensitive: options.sensitive ?? false,
    run: () => {
      throw new InvalidArgumentError(
        `${where}: tool "${options.name}" delegates to an agent and runs only as a tool of an agent's loop`,
      );
    },
  });
  const delegation: Delegation = Object.freeze({
    agentId,
    model: child.model.model,
    agent,
    tools: child.config.tools,
    loop: child,
    run: (call: ParentCall) => runChildCall(spec, call),
  });
  return Object.freeze({ ...made, [delegationKey]: delegation }) as Tool<
    v.InferOutput<TSchema>,
    string | ChildRunError
  >;
}

function checkBudget(budget: Budget, where: string): Budget {
  if (!budget || typeof budget !== "object")
    throw new InvalidArgumentError(`${where}: budget must be an object like { maxUsd: 0.5 }`);
  for (const key of ["maxSteps", "maxTokens", "maxUsd", "wallClockMs"] as const) {
    const value = budget[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value <= 0))
      throw new InvalidArgumentError(
        `${where}: budget.${key} must be a positive number, got ${JSON.stringify(value)}`,
      );
  }
  return { ...budget };
}

/**
 * Checks the delegating tools of an agent being made: every child's model has a price in the
 * parent's table, no agent is reachable from itself, and the tree is no deeper than
 * `maxDepth`. Throws `InvalidArgumentError` naming the agent and what to change.
 */
export function checkDelegations(
  agentId: string,
  tools: readonly object[],
  prices: Readonly<Record<string, ModelPrice>>,
  maxDepth: number,
): void {
  for (const item of tools) {
    const delegation = delegationOf(item);
    if (!delegation) continue;
    try {
      priceOf(delegation.model, prices);
    } catch (error) {
      if (!UnknownModelPriceError.isInstance(error)) throw error;
      throw new InvalidArgumentError(
        `[core] createAgent (agent "${agentId}"): its tool "${(item as Tool).name}" runs agent "${delegation.agentId}" on model "${delegation.model}", which this agent's prices do not know; add it to this agent's prices so the tree's budget can count the child's spend`,
        { cause: error },
      );
    }
  }
  sameNameTools(agentId, new Map(), tools);
  const depth = treeDepth(agentId, tools, []);
  if (depth > maxDepth)
    throw new InvalidArgumentError(
      `[core] createAgent (agent "${agentId}"): its agents-as-tools nest ${depth} deep, past maxDepth ${maxDepth}; flatten the tree or raise maxDepth`,
    );
}

/** A tool's input schema as canonical JSON (what its arguments are named and typed). */
function inputOf(item: object): string | undefined {
  const schema = (item as Partial<Tool>).spec?.input_schema;
  return schema === undefined ? undefined : canonicalJson(schema as unknown as JsonValue);
}

/**
 * Refuses a tree in which a descendant has a tool with an ancestor's tool's name but other
 * arguments: an ancestor's gates judge the descendant's calls by tool name, so a sink spec or
 * policy rule on an argument the other tool names differently would check nothing.
 */
function sameNameTools(
  agentId: string,
  above: ReadonlyMap<string, { input: string | undefined; owner: string }>,
  tools: readonly object[],
  owner = agentId,
  seen: ReadonlySet<object> = new Set(),
): void {
  const here = new Map(above);
  for (const item of tools) {
    const name = (item as Partial<Tool>).spec?.name;
    if (typeof name !== "string") continue;
    const input = inputOf(item);
    const ancestor = above.get(name);
    if (ancestor && ancestor.input !== input)
      throw new InvalidArgumentError(
        `[core] createAgent (agent "${agentId}"): agent "${owner}" has a tool "${name}" whose arguments differ from the tool "${name}" of its ancestor agent "${ancestor.owner}"; the ancestor's gates judge the child's calls by tool name, so rename one of them (or give both the same input schema)`,
      );
    if (!here.has(name)) here.set(name, { input, owner });
  }
  for (const item of tools) {
    const delegation = delegationOf(item);
    if (!delegation || seen.has(delegation.agent)) continue;
    sameNameTools(
      agentId,
      here,
      delegation.tools,
      delegation.agentId,
      new Set([...seen, delegation.agent]),
    );
  }
}

/** How deep the delegations under `tools` go; throws on an agent reachable from itself. */
function treeDepth(agentId: string, tools: readonly object[], path: readonly Delegation[]): number {
  let deepest = 0;
  for (const item of tools) {
    const delegation = delegationOf(item);
    if (!delegation) continue;
    if (path.some((seen) => seen.agent === delegation.agent))
      throw new InvalidArgumentError(
        `[core] createAgent (agent "${agentId}"): agent "${delegation.agentId}" can call itself through ${[...path, delegation].map((entry) => `"${entry.agentId}"`).join(" -> ")}; an agent may not be reachable from itself: remove one of these asTool tools`,
      );
    deepest = Math.max(deepest, 1 + treeDepth(agentId, delegation.tools, [...path, delegation]));
  }
  return deepest;
}
