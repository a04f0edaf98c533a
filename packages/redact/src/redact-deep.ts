import { RedactOptionsError } from "./redact-error.js";
import { engineFor, type RedactionEngine, type RedactOptions } from "./redaction-engine.js";
import type { RedactionScope } from "./redaction-scope.js";
import { createRedactionScope } from "./redaction-scope.js";
import { isSensitiveKey } from "./sensitive-key.js";
import { createStringCache } from "./string-cache.js";

/** Strings this long or shorter are remembered by a deep redactor (span attributes, keys, reasons). */
const CACHED_LENGTH = 256;
/** How many redacted strings a deep redactor remembers (at most CACHED_LENGTH characters each). */
const CACHED_ENTRIES = 2048;

/** Options of `redactDeep`: the shared options plus how keys mark values as secret. */
export interface RedactDeepOptions extends RedactOptions {
  /**
   * More key names whose values are always redacted, whatever they hold: exact names
   * (case-insensitive) or regular expressions. Added to the built-in list (`password`,
   * `token`, `authorization`, `cookie`, `api_key`, `secret`, …).
   */
  sensitiveKeys?: readonly (string | RegExp)[];
  /** Deeper values are replaced by `[TRUNCATED]` (fail closed). Defaults to 64. */
  maxDepth?: number;
}

const DEEP_KEYS = ["sensitiveKeys", "maxDepth"] as const;

/** A compiled deep redactor. @internal */
export interface DeepRedactor {
  (value: unknown, scope?: RedactionScope): unknown;
  readonly engine: RedactionEngine;
}

/** Validates deep options and compiles a reusable deep redactor. @internal */
export function compileDeepRedactor(options: unknown, name: string): DeepRedactor {
  const engine = engineFor(options, name, DEEP_KEYS);
  const { sensitiveKeys, maxDepth } = (options ?? {}) as RedactDeepOptions;
  const exactKeys = new Set<string>();
  const keyPatterns: RegExp[] = [];
  if (sensitiveKeys !== undefined) {
    if (!Array.isArray(sensitiveKeys)) {
      throw new RedactOptionsError(
        `[redact] ${name}: sensitiveKeys must be an array of strings or regular expressions.`,
      );
    }
    for (const key of sensitiveKeys) {
      if (typeof key === "string") exactKeys.add(key.toLowerCase());
      else if (key instanceof RegExp) keyPatterns.push(key);
      else
        throw new RedactOptionsError(
          `[redact] ${name}: each sensitive key must be a string or a RegExp.`,
        );
    }
  }
  if (
    maxDepth !== undefined &&
    !(Number.isInteger(maxDepth) && maxDepth >= 1 && maxDepth <= 10_000)
  ) {
    throw new RedactOptionsError(
      `[redact] ${name}: maxDepth must be an integer from 1 to 10000; got ${String(maxDepth)}.`,
    );
  }
  const depthLimit = maxDepth ?? 64;
  const keyCache = new Map<string, boolean>();
  // Span attributes, tool names, reasons and object keys repeat from one call to the next.
  // Only "type" placeholders with the built-in detectors are a pure function of the text; an
  // indexed placeholder must reach its scope (a vault records the value), and a custom
  // detector may hold state.
  const textCache =
    engine.placeholder === "type" &&
    (options as RedactDeepOptions | undefined)?.detectors === undefined
      ? createStringCache(CACHED_ENTRIES, CACHED_LENGTH)
      : undefined;
  const redactText = (value: string, scope: RedactionScope | undefined): string => {
    if (textCache === undefined || value.length > CACHED_LENGTH)
      return engine.apply(value, engine.find(value), scope);
    let redacted = textCache.get(value);
    if (redacted === undefined) {
      redacted = engine.apply(value, engine.find(value), scope);
      textCache.set(value, redacted);
    }
    return redacted;
  };

  function sensitive(key: string): boolean {
    let known = keyCache.get(key);
    if (known === undefined) {
      known =
        isSensitiveKey(key) ||
        exactKeys.has(key.toLowerCase()) ||
        keyPatterns.some((pattern) => {
          pattern.lastIndex = 0;
          return pattern.test(key);
        });
      if (keyCache.size > 4096) keyCache.clear();
      keyCache.set(key, known);
    }
    return known;
  }

  const redactDeepValue = ((root: unknown, givenScope?: RedactionScope): unknown => {
    const scope =
      givenScope ??
      engine.scope ??
      (engine.placeholder === "indexed" ? createRedactionScope() : undefined);
    const seen = new Map<object, unknown>();
    const text = (value: string): string => redactText(value, scope);

    const secretValue = (value: unknown): unknown => {
      if (value === null || value === undefined || typeof value === "boolean" || value === "")
        return value;
      const finding = { type: "SECRET", start: 0, end: 0, rule: "sensitive-key" };
      if (engine.placeholder === "type") return "[SECRET]";
      if (engine.placeholder === "indexed")
        return (scope ?? createRedactionScope()).token("SECRET", value);
      return engine.placeholder(finding, typeof value === "string" ? value : String(value));
    };

    const walk = (value: unknown, depth: number): unknown => {
      if (typeof value === "string") return text(value);
      if (typeof value !== "object" || value === null) return value;
      if (seen.has(value)) return seen.get(value);
      if (depth >= depthLimit) return "[TRUNCATED]";
      if (Array.isArray(value)) {
        const copy: unknown[] = [];
        seen.set(value, copy);
        for (const item of value) copy.push(walk(item, depth + 1));
        return copy;
      }
      if (value instanceof Date) return new Date(value.getTime());
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value;
      if (value instanceof Map) {
        const copy = new Map<unknown, unknown>();
        seen.set(value, copy);
        for (const [key, item] of value) {
          const isSecret = typeof key === "string" && sensitive(key);
          copy.set(walk(key, depth + 1), isSecret ? secretValue(item) : walk(item, depth + 1));
        }
        return copy;
      }
      if (value instanceof Set) {
        const copy = new Set<unknown>();
        seen.set(value, copy);
        for (const item of value) copy.add(walk(item, depth + 1));
        return copy;
      }
      if (value instanceof Error) {
        const copy = Object.create(Object.getPrototypeOf(value) as object) as Record<
          string,
          unknown
        >;
        seen.set(value, copy);
        for (const key of ["name", "message", "stack"] as const) {
          const field = (value as unknown as Record<string, unknown>)[key];
          if (field !== undefined) {
            Object.defineProperty(copy, key, {
              value: walk(field, depth + 1),
              writable: true,
              configurable: true,
              enumerable: false,
            });
          }
        }
        if ("cause" in value) {
          Object.defineProperty(copy, "cause", {
            value: walk(value.cause, depth + 1),
            writable: true,
            configurable: true,
            enumerable: false,
          });
        }
        copyProperties(value as unknown as Record<string, unknown>, copy, depth);
        return copy;
      }
      const prototype = Object.getPrototypeOf(value) as object | null;
      const plain = prototype === Object.prototype || prototype === null;
      const record = value as Record<string, unknown>;
      if (!plain && typeof record.toJSON === "function") {
        // What a logger would write for it (URL, Decimal, Buffer-like wrappers).
        const json = (record.toJSON as () => unknown)();
        const copy = walk(json, depth + 1);
        seen.set(value, copy);
        return copy;
      }
      const copy: Record<string, unknown> = prototype === null ? Object.create(null) : {};
      seen.set(value, copy);
      copyProperties(record, copy, depth);
      return copy;
    };

    const copyProperties = (
      source: Record<string, unknown>,
      target: Record<string, unknown>,
      depth: number,
    ): void => {
      for (const key of Object.keys(source)) {
        let item: unknown;
        try {
          item = source[key];
        } catch {
          item = "[UNREADABLE]";
        }
        const redactedKey = text(key);
        target[redactedKey] = sensitive(key) ? secretValue(item) : walk(item, depth + 1);
      }
    };

    return walk(root, 0);
  }) as DeepRedactor;
  Object.defineProperty(redactDeepValue, "engine", { value: engine });
  return redactDeepValue;
}

/**
 * Redacts every string in a value, deeply: objects, arrays, Maps, Sets and Errors are copied
 * (the input is never mutated), cycles are kept as cycles in the copy, and values under
 * sensitive keys (`password`, `token`, `authorization`, `cookie`, `api_key`, `secret`, …) are
 * replaced whatever they hold. Object keys are redacted too. Class instances with `toJSON`
 * are redacted as what they serialise to.
 *
 * How it fails: invalid options throw `RedactOptionsError`; a getter that throws is written
 * as `[UNREADABLE]`; values nested deeper than `maxDepth` become `[TRUNCATED]`.
 *
 * @example
 * redactDeep({ user: "jane@acme.io", password: 1234, headers: { authorization: "Basic x" } });
 * // { user: "[EMAIL]", password: "[SECRET]", headers: { authorization: "[SECRET]" } }
 */
export function redactDeep(value: unknown, options?: RedactDeepOptions): unknown {
  return compileDeepRedactor(options, "redactDeep")(value);
}
