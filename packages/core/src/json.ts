/** A JSON value, as stored in the event log. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * Serialises a value canonically: object keys sorted, no whitespace, `undefined` dropped.
 * Two values that are equal as JSON give the same string, whatever their key order.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value, []));
}

// `ancestors` holds the objects on the path from the root: a value met again on its own path is
// a cycle. An array is cheaper here than a WeakSet (most values are a few levels deep, and a
// WeakSet per call costs an allocation and extra work for the garbage collector).
function sortKeys(value: unknown, ancestors: object[]): unknown {
  if (value === null || typeof value !== "object") return value;
  if (ancestors.includes(value)) throw new TypeError("canonicalJson: value contains a cycle");
  ancestors.push(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((item) => (item === undefined ? null : sortKeys(item, ancestors)));
  } else if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    out = sortKeys((value as { toJSON: () => unknown }).toJSON(), ancestors);
  } else {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) sorted[key] = sortKeys(item, ancestors);
    }
    out = sorted;
  }
  ancestors.pop();
  return out;
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
