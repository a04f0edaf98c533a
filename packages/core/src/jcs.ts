/**
 * RFC 8785, the JSON Canonicalization Scheme (JCS): one byte string per JSON value, so an
 * approver, an auditor or another implementation recomputes a digest from the arguments alone.
 *
 * Objects' keys are sorted by their UTF-16 code units; strings and numbers are serialised as
 * ECMAScript's `JSON.stringify` does (numbers in the shortest round-trip form, `-0` as `0`);
 * no whitespace. For JavaScript values that are not JSON, it follows `JSON.stringify`:
 * `toJSON` is called, `undefined`, functions and symbols are left out of objects and become
 * `null` in arrays. The output is the same as the `canonicalize` package's (the reference
 * implementation by one of the RFC's authors), written as one pass that builds no
 * intermediate objects (see docs/decisions/0012-rfc-8785-digests.md for the measurement).
 */

/** How `canonicalize` treats numbers JSON cannot hold (`NaN`, `Infinity`). */
export interface CanonicalizeOptions {
  /**
   * `true`: write them as `null`, as `JSON.stringify` does (for digests that must never throw).
   * Default `false`: throw a `TypeError`, as RFC 8785 requires.
   */
  lenient?: boolean;
}

/**
 * The RFC 8785 canonical JSON text of a value. Throws a `TypeError` on a cycle, a `BigInt`, or
 * (unless `lenient`) a number that is not finite.
 *
 * @example
 * canonicalize({ b: 1, a: [true, "x"] }); // '{"a":[true,"x"],"b":1}'
 */
export function canonicalize(value: unknown, options: CanonicalizeOptions = {}): string {
  const out = write(value, options.lenient === true, 0);
  // A bare `undefined` (or function) has no JSON text; JSON.stringify gives undefined, JCS null.
  return out ?? "null";
}

/** Deeper than this is taken for a cycle (JSON.stringify would overflow the stack first). */
const maxDepth = 2048;

// Cycles are caught by depth rather than by tracking the path: a path costs an allocation and
// a search per object, and tool arguments are a few levels deep.
function write(value: unknown, lenient: boolean, depth: number): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      if (Number.isFinite(value)) return JSON.stringify(value);
      if (lenient) return "null";
      throw new TypeError(`canonicalize: ${value} is not a JSON number (RFC 8785)`);
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      throw new TypeError("canonicalize: a BigInt is not a JSON value");
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (value === null) return "null";
  const object = value as object;
  if (typeof (object as { toJSON?: unknown }).toJSON === "function")
    return write((object as { toJSON: () => unknown }).toJSON(), lenient, depth + 1);
  if (depth > maxDepth)
    throw new TypeError("canonicalize: the value contains a cycle (or nests deeper than 2048)");
  let text: string;
  if (Array.isArray(object)) {
    text = "[";
    for (let index = 0; index < object.length; index += 1) {
      if (index > 0) text += ",";
      text += write(object[index], lenient, depth + 1) ?? "null";
    }
    text += "]";
  } else {
    text = "{";
    const record = object as Record<string, unknown>;
    // Default sort compares UTF-16 code units, which is the order RFC 8785 prescribes.
    const keys = Object.keys(record).sort();
    let first = true;
    for (const key of keys) {
      const item = write(record[key], lenient, depth + 1);
      if (item === undefined) continue;
      text += first ? JSON.stringify(key) : `,${JSON.stringify(key)}`;
      text += `:${item}`;
      first = false;
    }
    text += "}";
  }
  return text;
}
