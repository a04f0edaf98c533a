import { InvalidArgumentError } from "@loopguard/core";

/** A compiled argument path such as `refund.amount` or `items[0].sku`. */
export interface ArgPath {
  /** The path as written. */
  readonly text: string;
  /** Reads the value at the path, or `undefined` when any step is missing. Own properties only. */
  read(args: unknown): unknown;
}

const segmentPattern = /^[^.[\]]+$/;

/**
 * Compiles a dotted path into the arguments: `amount`, `refund.amount`, `items.0.sku` or
 * `items[0].sku`. Only own properties are read, so `__proto__` or `constructor` never reach
 * the prototype.
 *
 * @example
 * argPath("refund.amount").read({ refund: { amount: 600 } }); // 600
 */
export function argPath(text: string): ArgPath {
  if (typeof text !== "string" || text.length === 0 || text.length > 256) {
    throw new InvalidArgumentError(
      `[policy] argument path ${JSON.stringify(text)} is invalid: use a non-empty dotted path such as "amount" or "refund.amount"`,
    );
  }
  const segments: string[] = [];
  for (const part of text.replace(/\[(\d+)\]/g, ".$1").split(".")) {
    if (!segmentPattern.test(part)) {
      throw new InvalidArgumentError(
        `[policy] argument path ${JSON.stringify(text)} is invalid: segment ${JSON.stringify(part)} is empty or has a bracket; write "items.0.sku" or "items[0].sku"`,
      );
    }
    segments.push(part);
  }
  if (segments.length === 1) {
    const key = segments[0]!;
    return { text, read: (args) => readKey(args, key) };
  }
  return {
    text,
    read(args) {
      let value: unknown = args;
      for (const key of segments) {
        value = readKey(value, key);
        if (value === undefined) return undefined;
      }
      return value;
    },
  };
}

function readKey(value: unknown, key: string): unknown {
  if (value === null || typeof value !== "object") return undefined;
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}
