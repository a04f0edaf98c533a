import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import type { ToolSpec } from "./contracts/model.js";
import { InvalidArgumentError } from "./errors.js";
import { minOutputChars } from "./output-limit.js";

/** What a tool handler receives besides its arguments. */
export interface ToolContext {
  /** `runId:toolUseId`: pass it to the payment or email API so a re-run does nothing twice. */
  idempotencyKey: string;
  /** Aborted at the tool's timeout, when the run is cancelled, or when its wall clock runs out. */
  signal: AbortSignal;
  runId: string;
  agentId: string;
  toolUseId: string;
  /** 1 for the first attempt; higher for automatic retries of idempotent tools. */
  attempt: number;
}

/** A valibot object schema, the only kind a tool's input may be. */
export type ObjectSchema =
  | v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>
  | v.LooseObjectSchema<v.ObjectEntries, v.ErrorMessage<v.LooseObjectIssue> | undefined>
  | v.StrictObjectSchema<v.ObjectEntries, v.ErrorMessage<v.StrictObjectIssue> | undefined>;

/** How to declare a tool. */
export interface ToolOptions<TSchema extends ObjectSchema, TResult> {
  /** 1 to 64 letters, digits, `_` or `-`. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** A valibot object schema; give each field a `v.description(...)`. */
  input: TSchema;
  /** Guarded by the taint gate: arguments must not carry values from flagged text. */
  sensitive?: boolean;
  /**
   * Whose text the tool returns: `trusted` for internal lookups (the customer record, the order
   * database), `untrusted` (the default) for anything a third party can write (pages, emails,
   * tickets, KB articles). Gates that demand trusted provenance accept only values that came
   * from the task, run attributes or a trusted tool's output.
   */
  trust?: "trusted" | "untrusted";
  /**
   * Which personal data the tool gets back from the vault at execution time: `true` for all of
   * it, a list of kinds (`["EMAIL"]`, the `KIND` of `<KIND_n>` tokens) for those only, `false`
   * (the default) for none. A tool that does not declare it receives the tokens the model wrote,
   * so a read-only `fetch_url` asked to "verify" `?e=<EMAIL_1>` never sends the real address.
   * Gates judge real values either way.
   */
  reveal?: boolean | readonly string[];
  /** Safe to retry automatically on a transient failure. Default `false`. */
  idempotent?: boolean;
  /** Milliseconds before the call is abandoned. Default 30 000. */
  timeoutMs?: number;
  /** What one call costs in USD, counted against the run's `maxUsd`. Default 0. */
  costUsd?: number;
  /**
   * The most characters of one output the model sees; longer outputs are cut to their head and
   * tail with a marker. Default: the agent's `maxOutputChars` (100 000). At least 1 000.
   */
  maxOutputChars?: number;
  /** Runs the tool; return a string or any JSON value (sent to the model as JSON). */
  run: (args: v.InferOutput<TSchema>, context: ToolContext) => Promise<TResult> | TResult;
}

/** The result of parsing a call's arguments. */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: string[] };

/** A declared tool. */
export interface Tool<TArgs = Record<string, unknown>, TResult = unknown> {
  readonly name: string;
  readonly description: string;
  readonly sensitive: boolean;
  /** Whose text the tool returns; `untrusted` unless declared. */
  readonly trust: "trusted" | "untrusted";
  /** What the vault reveals into the tool's arguments (see `ToolOptions.reveal`); absent: nothing. */
  readonly reveal?: boolean | readonly string[];
  readonly idempotent: boolean;
  readonly timeoutMs: number;
  readonly costUsd: number;
  /** The tool's own cap on what the model sees of one output (else the agent's). */
  readonly maxOutputChars?: number;
  /** The Anthropic tool definition, with `strict: true` and `additionalProperties: false`. */
  readonly spec: ToolSpec;
  /** Validates arguments strictly (unknown keys are an error). */
  parse(args: unknown): ParseResult<TArgs>;
  readonly run: (args: TArgs, context: ToolContext) => Promise<TResult> | TResult;
}

const namePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Declares a tool once: its schema gives the model its definition and validates every call.
 *
 * @example
 * const refund = tool({
 *   name: "issue_refund",
 *   description: "Refund money to the customer's original payment method.",
 *   input: v.object({ order_id: v.pipe(v.string(), v.description("The order")), amount: v.number() }),
 *   sensitive: true,
 *   run: async (args, ctx) => payments.refund(args, { idempotencyKey: ctx.idempotencyKey }),
 * });
 */
export function tool<TSchema extends ObjectSchema, TResult>(
  options: ToolOptions<TSchema, TResult>,
): Tool<v.InferOutput<TSchema>, TResult> {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError(
      "[core] tool(options): options must be an object with name, description, input and run",
    );
  }
  const { name, description, input, run } = options;
  if (typeof name !== "string" || !namePattern.test(name)) {
    throw new InvalidArgumentError(
      `[core] tool name ${JSON.stringify(name)} is invalid: use 1 to 64 letters, digits, "_" or "-"`,
    );
  }
  if (typeof description !== "string" || description.trim() === "") {
    throw new InvalidArgumentError(
      `[core] tool "${name}" needs a non-empty description: the model reads it to decide when to call the tool`,
    );
  }
  if (
    !input ||
    typeof input !== "object" ||
    !["object", "strict_object", "loose_object"].includes(input.type)
  ) {
    throw new InvalidArgumentError(
      `[core] tool "${name}": input must be a valibot object schema, e.g. v.object({ ... })`,
    );
  }
  if (typeof run !== "function") {
    throw new InvalidArgumentError(
      `[core] tool "${name}": run must be a function (args, context) => result`,
    );
  }
  const trust = options.trust ?? "untrusted";
  if (trust !== "trusted" && trust !== "untrusted") {
    throw new InvalidArgumentError(
      `[core] tool "${name}": trust must be "trusted" or "untrusted", got ${JSON.stringify(options.trust)}`,
    );
  }
  const reveal = options.reveal ?? false;
  if (
    typeof reveal !== "boolean" &&
    !(
      Array.isArray(reveal) &&
      reveal.every((kind) => typeof kind === "string" && /^[A-Z][A-Z0-9_]*$/.test(kind))
    )
  ) {
    throw new InvalidArgumentError(
      `[core] tool "${name}": reveal must be true, false or a list of token kinds such as ["EMAIL", "PHONE"], got ${JSON.stringify(options.reveal)}`,
    );
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidArgumentError(
      `[core] tool "${name}": timeoutMs must be a positive number of milliseconds, got ${String(options.timeoutMs)}`,
    );
  }
  const costUsd = options.costUsd ?? 0;
  if (!Number.isFinite(costUsd) || costUsd < 0) {
    throw new InvalidArgumentError(
      `[core] tool "${name}": costUsd must be a non-negative number, got ${String(options.costUsd)}`,
    );
  }
  const maxOutputChars = options.maxOutputChars;
  if (
    maxOutputChars !== undefined &&
    (!Number.isInteger(maxOutputChars) || maxOutputChars < minOutputChars)
  ) {
    throw new InvalidArgumentError(
      `[core] tool "${name}": maxOutputChars must be an integer of at least ${minOutputChars}, got ${String(options.maxOutputChars)}`,
    );
  }
  let schema: Record<string, unknown>;
  try {
    schema = toJsonSchema(input, { errorMode: "throw" }) as Record<string, unknown>;
  } catch (error) {
    throw new InvalidArgumentError(
      `[core] tool "${name}": its input schema cannot be expressed as JSON Schema (${(error as Error).message}); use plain object, string, number, boolean, array, picklist and optional schemas`,
      { cause: error },
    );
  }
  delete schema.$schema;
  if (input.type === "loose_object") schema.additionalProperties = true;
  closeObjects(schema);
  const spec: ToolSpec = { name, description, input_schema: schema, strict: true };

  return Object.freeze({
    name,
    description,
    sensitive: options.sensitive ?? false,
    trust,
    reveal: typeof reveal === "boolean" ? reveal : Object.freeze([...reveal]),
    idempotent: options.idempotent ?? false,
    timeoutMs,
    costUsd,
    ...(maxOutputChars !== undefined ? { maxOutputChars } : {}),
    spec,
    run: run as Tool<v.InferOutput<TSchema>, TResult>["run"],
    parse(args: unknown): ParseResult<v.InferOutput<TSchema>> {
      const unknown = unknownKeys(schema, args, "");
      const parsed = v.safeParse(input, args);
      const issues = [
        ...unknown.map((path) => `${path}: unknown key (the tool does not take it)`),
        ...(parsed.success ? [] : parsed.issues.map(formatIssue)),
      ];
      if (issues.length > 0 || !parsed.success) return { ok: false, issues };
      return { ok: true, value: parsed.output };
    },
  });
}

/** Sets `additionalProperties: false` on every object node, as strict tool use requires. */
function closeObjects(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) closeObjects(item);
    return;
  }
  if (node === null || typeof node !== "object") return;
  const record = node as Record<string, unknown>;
  if (record.type === "object" && record.additionalProperties === undefined) {
    record.additionalProperties = false;
  }
  for (const value of Object.values(record)) closeObjects(value);
}

/** Paths of keys in `value` that the JSON schema does not declare. */
function unknownKeys(schema: unknown, value: unknown, path: string): string[] {
  if (schema === null || typeof schema !== "object" || value === null || typeof value !== "object")
    return [];
  const node = schema as Record<string, unknown>;
  if (Array.isArray(value)) {
    if (node.type !== "array" || node.items === undefined) return [];
    return value.flatMap((item, index) => unknownKeys(node.items, item, `${path}[${index}]`));
  }
  const out: string[] = [];
  if (node.type === "object" && node.properties && typeof node.properties === "object") {
    const properties = node.properties as Record<string, unknown>;
    for (const key of Object.keys(value)) {
      const child = `${path === "" ? "" : `${path}.`}${key}`;
      if (!(key in properties)) {
        if (node.additionalProperties === false) out.push(child);
      } else {
        out.push(...unknownKeys(properties[key], (value as Record<string, unknown>)[key], child));
      }
    }
  }
  for (const variant of [
    ...((node.anyOf as unknown[]) ?? []),
    ...((node.oneOf as unknown[]) ?? []),
  ]) {
    if (
      variant &&
      typeof variant === "object" &&
      (variant as Record<string, unknown>).type === "object"
    ) {
      out.push(...unknownKeys(variant, value, path));
      break;
    }
  }
  return out;
}

function formatIssue(issue: v.BaseIssue<unknown>): string {
  const path = issue.path?.map((item) => String(item.key)).join(".") ?? "";
  return `${path === "" ? "(arguments)" : path}: ${issue.message}`;
}
