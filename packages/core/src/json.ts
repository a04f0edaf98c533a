import { canonicalize } from "./jcs.js";

/** A JSON value, as stored in the event log. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * Serialises a value canonically (RFC 8785, JCS): object keys sorted, no whitespace,
 * `undefined` dropped; numbers JSON cannot hold become `null` instead of throwing. Two values
 * that are equal as JSON give the same string, whatever their key order.
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value, { lenient: true });
}

/**
 * A deep copy of a JSON-like value, for stores that must keep their own copy of each event.
 * Plain objects and arrays are copied; strings and other primitives are shared (they are
 * immutable), which makes this several times cheaper than `structuredClone` on events that
 * carry long tool outputs. Anything else (a Date, a Map, a typed array, a function) and
 * values nested deeper than 200 levels go through `structuredClone`, so the result and the
 * errors are the same as `structuredClone`'s.
 */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== "object") {
    return typeof value === "function" || typeof value === "symbol"
      ? structuredClone(value)
      : value;
  }
  try {
    return copy(value, 0) as T;
  } catch (error) {
    if (error === tooDeep) return structuredClone(value);
    throw error;
  }
}

const tooDeep = Symbol("too deep");

function copy(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== "object") {
    return typeof value === "function" || typeof value === "symbol"
      ? structuredClone(value)
      : value;
  }
  if (depth > 200) throw tooDeep;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return structuredClone(value);
    const out: unknown[] = new Array(value.length);
    for (let index = 0; index < value.length; index += 1)
      out[index] = copy(value[index], depth + 1);
    return out;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value))
    out[key] = copy((value as Record<string, unknown>)[key], depth + 1);
  return out;
}
