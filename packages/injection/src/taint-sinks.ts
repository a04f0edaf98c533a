/**
 * The sinks of the taint gate: validated at construction (unknown kinds, argument paths a
 * tool's schema does not have, `require` without arguments are `[injection]` errors), and
 * asked per call which arguments are checked by detection taint and which must be vouched for.
 */
import type { ToolCall } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { type SinkKind, sinkKinds } from "./sink-values.js";

/** A sink: a tool (glob) whose calls must not carry tainted values, optionally only in some arguments. */
export interface TaintSink {
  /** Tool name or glob (`*` any run of characters, `?` one). */
  tool: string;
  /**
   * The arguments to check; default every argument. Either names (`["to"]`, each read as kind
   * `auto`) or a record of argument path to kind: `{ url: "url", to: "email", "payee.iban":
   * "iban", order_id: "id", amount: "amount" }`. A path is dot-separated; arrays on the way are
   * walked (every element is checked). Kinds: `url`, `email`, `domain`, `host`, `phone`,
   * `iban`, `id`, `amount`, `path`, `auto` (inferred from the value; the refusal says what it
   * inferred).
   */
  args?: readonly string[] | Readonly<Record<string, SinkKind>>;
  /**
   * `trusted`: every value in the named arguments, parsed as its kind the way the sink parses
   * it, must equal (canonical form, exactly: no look-alike folding) a value in trusted text
   * (the task, run attributes, or the output of a tool declared `trust: "trusted"` that carried
   * it before any model-written argument did); otherwise the call is refused as
   * `untrusted_provenance`, or as `unparsable_argument` when the value is not of its kind (or
   * asked, with `onTaint: "ask"`), whatever the scanner said. Needs `args`.
   */
  require?: "trusted";
}

/** A validated sink. */
export interface CompiledSink {
  tool: string;
  pattern: RegExp;
  /** Top-level argument names (the first segment of each path), or `undefined` for every argument. */
  names?: readonly string[];
  /** Argument paths and kinds. */
  kinds?: ReadonlyArray<readonly [path: string, kind: SinkKind]>;
  require?: "trusted";
}

/** What a tool looks like to the sink check (core's `Tool`: its name and JSON schema). */
export interface SinkTool {
  readonly name: string;
  readonly spec: { readonly input_schema: unknown };
}

/** Compiles a glob (`*`, `?`) to an anchored pattern. */
export function globPattern(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${source}$`);
}

const pathPattern = /^[A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*$/;

/** Whether a JSON schema has a value at a dot-separated path (through `items` and `anyOf`). */
export function schemaHasPath(schema: unknown, path: readonly string[]): boolean {
  if (path.length === 0) return true;
  if (schema === null || typeof schema !== "object") return false;
  const node = schema as Record<string, unknown>;
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const options = node[key];
    if (Array.isArray(options) && options.some((option) => schemaHasPath(option, path)))
      return true;
  }
  if (node.items !== undefined && schemaHasPath(node.items, path)) return true;
  const properties = node.properties as Record<string, unknown> | undefined;
  if (properties && Object.hasOwn(properties, path[0]!))
    return schemaHasPath(properties[path[0]!], path.slice(1));
  return false;
}

/** Validates the `sinks` option (and, with `tools`, every argument path against the schemas). */
export function compileSinks(
  sinks: unknown,
  tools: readonly SinkTool[] | undefined,
): CompiledSink[] {
  if (sinks === undefined) return [];
  if (!Array.isArray(sinks))
    throw new InvalidArgumentError(
      "[injection] taintGate({ sinks }): sinks must be an array of tool globs or { tool, args?, require? }",
    );
  return sinks.map((sink: unknown) => {
    const entry = (typeof sink === "string" ? { tool: sink } : sink) as TaintSink | null;
    if (!entry || typeof entry !== "object" || typeof entry.tool !== "string" || entry.tool === "")
      throw new InvalidArgumentError(
        `[injection] taintGate({ sinks }): each sink is a tool glob or { tool, args? }, got ${JSON.stringify(sink)}`,
      );
    if (entry.require !== undefined && entry.require !== "trusted")
      throw new InvalidArgumentError(
        `[injection] taintGate({ sinks }): require of sink ${entry.tool} must be "trusted", got ${JSON.stringify(entry.require)}`,
      );
    const pattern = globPattern(entry.tool);
    let kinds: Array<readonly [string, SinkKind]> | undefined;
    if (Array.isArray(entry.args)) {
      if (entry.args.some((arg) => typeof arg !== "string" || !pathPattern.test(arg)))
        throw new InvalidArgumentError(
          `[injection] taintGate({ sinks }): args of sink ${entry.tool} must be argument names or dot-separated paths`,
        );
      kinds = entry.args.map((arg) => [arg, "auto"] as const);
    } else if (entry.args !== undefined) {
      if (entry.args === null || typeof entry.args !== "object")
        throw new InvalidArgumentError(
          `[injection] taintGate({ sinks }): args of sink ${entry.tool} must be an array of argument names or a record of argument path to kind`,
        );
      kinds = Object.entries(entry.args as Record<string, unknown>).map(([path, kind]) => {
        if (!pathPattern.test(path))
          throw new InvalidArgumentError(
            `[injection] taintGate({ sinks }): sink ${entry.tool} names argument path ${JSON.stringify(path)}; a path is names joined by dots`,
          );
        if (typeof kind !== "string" || !sinkKinds.includes(kind as SinkKind))
          throw new InvalidArgumentError(
            `[injection] taintGate({ sinks }): sink ${entry.tool} gives argument ${path} the unknown kind ${JSON.stringify(kind)}; use ${sinkKinds.join(", ")}`,
          );
        return [path, kind as SinkKind] as const;
      });
    }
    if (entry.require === "trusted" && (!kinds || kinds.length === 0))
      throw new InvalidArgumentError(
        `[injection] taintGate({ sinks }): sink ${entry.tool} with require: "trusted" needs args, the arguments that must come from trusted text (free text such as a reason is not meant to be checked)`,
      );
    if (tools && kinds) {
      const matching = tools.filter((tool) => pattern.test(tool.name));
      if (matching.length === 0)
        throw new InvalidArgumentError(
          `[injection] taintGate({ sinks, tools }): sink ${entry.tool} matches none of the tools given (${tools.map((tool) => tool.name).join(", ")}); check the name or glob`,
        );
      for (const tool of matching)
        for (const [path] of kinds)
          if (!schemaHasPath(tool.spec.input_schema, path.split(".")))
            throw new InvalidArgumentError(
              `[injection] taintGate({ sinks, tools }): sink ${entry.tool} names argument ${path}, which tool ${tool.name}'s input schema does not have; a sink on a missing argument would never check anything`,
            );
    }
    return {
      tool: entry.tool,
      pattern,
      ...(kinds ? { names: [...new Set(kinds.map(([path]) => path.split(".")[0]!))], kinds } : {}),
      ...(entry.require ? { require: entry.require } : {}),
    };
  });
}

/** The values at a dot-separated path of a call's arguments (arrays on the way are walked). */
export function valuesAt(args: Record<string, unknown>, path: string): unknown[] {
  let current: unknown[] = [args];
  for (const segment of path.split(".")) {
    const next: unknown[] = [];
    for (const item of current) {
      const items = Array.isArray(item) ? item : [item];
      for (const entry of items)
        if (entry !== null && typeof entry === "object" && Object.hasOwn(entry, segment))
          next.push((entry as Record<string, unknown>)[segment]);
    }
    current = next;
  }
  return current;
}

/** The typed arguments of a call that must have trusted provenance (path, kind). */
export function requiredArguments(
  sinks: readonly CompiledSink[],
  call: ToolCall,
): Array<readonly [string, SinkKind]> {
  const required = new Map<string, SinkKind>();
  for (const sink of sinks)
    if (sink.require === "trusted" && sink.kinds && sink.pattern.test(call.tool))
      for (const [path, kind] of sink.kinds) {
        // Two sinks naming one path: a declared kind beats `auto`.
        const known = required.get(path);
        if (known === undefined || known === "auto") required.set(path, kind);
      }
  return [...required];
}

/** Which arguments of the call detection taint checks, or `undefined` when the call is no sink. */
export function checkedArguments(
  sinks: readonly CompiledSink[],
  call: ToolCall,
  sensitiveTools: boolean,
  freeText: ReadonlySet<string>,
): string[] | undefined {
  const matching = sinks.filter((sink) => sink.pattern.test(call.tool));
  const named = new Set(matching.flatMap((sink) => sink.names ?? []));
  // Free text (a summary's body, a refund's reason) may quote a flagged page: only arguments
  // a sink names explicitly are checked among them.
  const all = Object.keys(call.args ?? {}).filter((arg) => !freeText.has(arg) || named.has(arg));
  if (sensitiveTools && call.sensitive) return all;
  if (matching.length === 0) return undefined;
  if (matching.some((sink) => !sink.names)) return all;
  return all.filter((arg) => named.has(arg));
}
