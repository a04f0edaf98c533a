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
  return JSON.stringify(sortKeys(value, new WeakSet()));
}

function sortKeys(value: unknown, seen: WeakSet<object>): unknown {
  if (value === null || typeof value !== "object") return value;
  if (seen.has(value)) throw new TypeError("canonicalJson: value contains a cycle");
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((item) => (item === undefined ? null : sortKeys(item, seen)));
  } else if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    out = sortKeys((value as { toJSON: () => unknown }).toJSON(), seen);
  } else {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) sorted[key] = sortKeys(item, seen);
    }
    out = sorted;
  }
  seen.delete(value);
  return out;
}
