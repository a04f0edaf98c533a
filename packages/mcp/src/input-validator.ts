import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { McpGuardError } from "./errors.js";

let draft7: Ajv | undefined;
let draft2020: Ajv2020 | undefined;

/** Validates one tool's arguments against the JSON Schema its server declared. */
export type InputValidator = (
  args: unknown,
) => { ok: true; value: Record<string, unknown> } | { ok: false; issues: string[] };

/**
 * Compiles a tool's `inputSchema` (draft-07, or 2020-12 when its `$schema` says so). A schema
 * the validator cannot compile (an unresolvable `$ref`, a keyword with a wrong type) throws
 * an `McpGuardError` naming the tool and the server, so no call is ever judged against a
 * schema nobody checked.
 */
export function compileInputSchema(schema: unknown, tool: string, server: string): InputValidator {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    throw new McpGuardError(
      `[mcp] tool "${tool}" from ${server} has no inputSchema object (got ${JSON.stringify(schema)}); MCP requires { "type": "object", ... }: fix the server's tool definition`,
    );
  }
  const record = schema as Record<string, unknown>;
  if (record.type !== undefined && record.type !== "object") {
    throw new McpGuardError(
      `[mcp] tool "${tool}" from ${server}: inputSchema.type is ${JSON.stringify(record.type)}, but tool arguments are an object; fix the server's tool definition`,
    );
  }
  const validate = compileSchema(
    record,
    (error) =>
      `[mcp] tool "${tool}" from ${server}: its inputSchema cannot be compiled (${error.message}); calls to it are refused until the server fixes the schema`,
  );
  return (args) => {
    if (args === null || typeof args !== "object" || Array.isArray(args))
      return { ok: false, issues: ["(root): arguments must be an object"] };
    if (validate(args)) return { ok: true, value: args as Record<string, unknown> };
    return { ok: false, issues: (validate.errors ?? []).map(formatIssue) };
  };
}

/**
 * Compiles a tool's `outputSchema` (draft-07, or 2020-12 when its `$schema` says so) into a
 * check of `structuredContent`: the issues, or an empty list when it matches. Throws an
 * `McpGuardError` naming the tool and the server when the schema cannot be compiled.
 */
export function compileOutputSchema(
  schema: unknown,
  tool: string,
  server: string,
): (value: unknown) => string[] {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema))
    throw new McpGuardError(
      `[mcp] tool "${tool}" from ${server}: its outputSchema is not an object (got ${JSON.stringify(schema)?.slice(0, 80)})`,
    );
  const record = schema as Record<string, unknown>;
  const validate = compileSchema(
    record,
    (error) =>
      `[mcp] tool "${tool}" from ${server}: its outputSchema cannot be compiled (${error.message})`,
  );
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map(formatIssue));
}

/**
 * Compiles a JSON Schema with draft-07, or 2020-12 when its `$schema` says so; throws an
 * `McpGuardError` with `message(error)` when it cannot be compiled.
 */
function compileSchema(
  record: Record<string, unknown>,
  message: (error: Error) => string,
): ValidateFunction {
  const is2020 = typeof record.$schema === "string" && record.$schema.includes("2020-12");
  try {
    if (is2020)
      draft2020 ??= new Ajv2020({
        strict: false,
        allErrors: true,
        validateSchema: true,
        logger: false,
      });
    else
      draft7 ??= new Ajv({ strict: false, allErrors: true, validateSchema: true, logger: false });
    const ajv = is2020 ? draft2020! : draft7!;
    // Another tool may have used the same $id; the schema is compiled on its own.
    const { $id: _id, ...own } = record;
    return ajv.compile(own);
  } catch (error) {
    throw new McpGuardError(message(error as Error), { cause: error });
  }
}

function formatIssue(error: ErrorObject): string {
  const path =
    error.instancePath === "" ? "(root)" : error.instancePath.slice(1).replaceAll("/", ".");
  if (error.keyword === "additionalProperties")
    return `${path === "(root)" ? "" : `${path}.`}${String(error.params.additionalProperty)}: unknown key (the tool does not take it)`;
  if (error.keyword === "required")
    return `${path === "(root)" ? "" : `${path}.`}${String(error.params.missingProperty)}: required`;
  return `${path}: ${error.message ?? error.keyword}`;
}
