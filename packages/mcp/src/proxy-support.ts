import type { Gate } from "@loopguard/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type CallToolResult, ResultSchema } from "@modelcontextprotocol/sdk/types.js";

/**
 * One run of `work` at a time: a call while it runs waits for it and for one more run after it
 * (so what changed meanwhile is seen), however many calls arrive (a server flooding
 * `list_changed` costs one list at a time).
 */
export function coalesced(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again: Promise<void> | undefined;
  return () => {
    if (!running) {
      running = work().finally(() => {
        running = undefined;
      });
      return running;
    }
    again ??= running
      .catch(() => {})
      .then(() => {
        again = undefined;
        running = work().finally(() => {
          running = undefined;
        });
        return running;
      });
    return again;
  };
}

/** Every page of a list request (`nextCursor`), parsed loosely: items are checked one by one. */
export async function listAll(client: Client, method: string, key: string): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1_000; page += 1) {
    const result = (await client.request(
      { method, params: cursor ? { cursor } : {} } as never,
      ResultSchema,
    )) as Record<string, unknown>;
    const list = result[key];
    if (!Array.isArray(list))
      throw new Error(
        `${method} answered without a ${key} array (got ${JSON.stringify(list)?.slice(0, 80)})`,
      );
    items.push(...list);
    cursor =
      typeof result.nextCursor === "string" && result.nextCursor !== ""
        ? result.nextCursor
        : undefined;
    if (!cursor) return items;
  }
  throw new Error(`${method} returned more than 1000 pages`);
}

/**
 * The tool globs the gates name: policy rules (`rules: [{ tool }]`), rate limits (`limits: [{
 * tool }]`) and the RunGuard's irreversible tools (`settings.irreversibleTools`), read from any
 * gate that has them.
 */
export function ruleToolNames(gates: readonly Gate[]): string[] {
  const names: string[] = [];
  const add = (tool: unknown) => {
    for (const name of Array.isArray(tool) ? tool : [tool])
      if (typeof name === "string" && name !== "" && name !== "*") names.push(name);
  };
  for (const gate of gates) {
    const holder = gate as {
      rules?: unknown;
      limits?: unknown;
      settings?: { irreversibleTools?: unknown };
    };
    for (const list of [holder.rules, holder.limits])
      if (Array.isArray(list))
        for (const item of list) add((item as { tool?: unknown } | null)?.tool);
    add(holder.settings?.irreversibleTools);
  }
  return names;
}

/** The prose of a definition a model reads: every string in it but its name, URI, MIME type, icons and `_meta`. */
export function proseOf(item: Record<string, unknown>): string {
  const out: string[] = [];
  const skip = new Set([
    "name",
    "uri",
    "uriTemplate",
    "mimeType",
    "icons",
    "_meta",
    "type",
    "$schema",
    "$ref",
    "$id",
  ]);
  const walk = (value: unknown, depth: number) => {
    if (depth > 64) return;
    if (typeof value === "string") out.push(value);
    else if (Array.isArray(value)) for (const child of value) walk(child, depth + 1);
    else if (isRecord(value))
      for (const [key, child] of Object.entries(value)) if (!skip.has(key)) walk(child, depth + 1);
  };
  walk(item, 0);
  return out.join("\n");
}

/** A copy of a definition with a neutral description and no prose in its schemas. */
export function neutralCopy(
  item: Record<string, unknown>,
  description: string,
): Record<string, unknown> {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (!isRecord(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value))
      if (!["description", "title", "examples", "default", "$comment"].includes(key))
        out[key] = strip(child);
    return out;
  };
  const copy = strip(item) as Record<string, unknown>;
  copy.description = description;
  if (isRecord(item.annotations)) copy.annotations = { ...(strip(item.annotations) as object) };
  return copy;
}

/** Whether a value is a plain record (an object, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The first 200 characters of a message on one line, for a log or an error. */
export function firstLine(text: string | undefined): string {
  const line = (text ?? "").replace(/\s+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** Waits `ms` without keeping the process alive. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** An MCP tool error result carrying `text`. */
export function toolError(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** The string-valued variables of an environment. */
export function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === "string") out[key] = value;
  return out;
}
