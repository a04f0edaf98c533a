import { digitsOf } from "./detectors/char-classes.js";
import { isCardNumber } from "./detectors/credit-card-detector.js";
import { RedactOptionsError } from "./redact-error.js";
import { engineFor, type RedactionEngine, type RedactOptions } from "./redaction-engine.js";
import type { RedactionScope } from "./redaction-scope.js";
import { createRedactionScope } from "./redaction-scope.js";
import { isSensitiveKey, keyWords } from "./sensitive-key.js";
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

/** Personal-data keys whose numeric values are redacted as that type (`phone: 4155550132`). */
const NUMERIC_PII_KEYS: [RegExp, string][] = [
  [/^(?:phone|mobile|tel|telephone|fax|cell|msisdn|whatsapp)$/, "PHONE"],
  [/^(?:ssn|social|sin|tin|itin|nino)$/, "US_SSN"],
  [/^(?:card|cc|pan|cardnumber|ccnumber)$/, "CREDIT_CARD"],
  [/^(?:iban|account|acct|routing|bic)$/, "IBAN"],
  [/^(?:dob|birthday|birthdate|birth)$/, "DATE_OF_BIRTH"],
  [/^(?:zip|zipcode|postcode|postal)$/, "ADDRESS"],
];

/** The PII type a key's words name, such as PHONE for `customer_phone`, or undefined. */
const numericKeyTypes = new Map<string, string | null>();

/**
 * The PII type a key's words name (cached: keys repeat on every span and log line). Only asked
 * for keys whose value is a number.
 */
function numericKeyType(key: string): string | undefined {
  let known = numericKeyTypes.get(key);
  if (known === undefined) {
    known = numericKeyTypeOf(key) ?? null;
    if (numericKeyTypes.size >= 2048) numericKeyTypes.clear();
    numericKeyTypes.set(key, known);
  }
  return known ?? undefined;
}

function numericKeyTypeOf(key: string): string | undefined {
  for (const word of keyWords(key))
    for (const [pattern, type] of NUMERIC_PII_KEYS) if (pattern.test(word)) return type;
  return undefined;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });
const ENCODER = new TextEncoder();

/** Decodes bytes as UTF-8, or undefined when they are not valid UTF-8. */
function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** A compiled deep redactor. @internal */
export interface DeepRedactor {
  (value: unknown, scope?: RedactionScope): unknown;
  readonly engine: RedactionEngine;
}

/** Validates deep options and compiles a reusable deep redactor. @internal */
export function compileDeepRedactor(options: unknown, name: string): DeepRedactor {
  const engine = engineFor(options, name, DEEP_KEYS);
  const { sensitiveKeys, maxDepth } = (options ?? {}) as RedactDeepOptions;
  const sensitive = sensitiveKeyMatcher(sensitiveKeys, name);
  if (
    maxDepth !== undefined &&
    !(Number.isInteger(maxDepth) && maxDepth >= 1 && maxDepth <= 10_000)
  ) {
    throw new RedactOptionsError(
      `[redact] ${name}: maxDepth must be an integer from 1 to 10000; got ${String(maxDepth)}.`,
    );
  }
  const depthLimit = maxDepth ?? 64;
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
  const redactDeepValue = ((root: unknown, givenScope?: RedactionScope): unknown => {
    const scope =
      givenScope ??
      engine.scope ??
      (engine.placeholder === "indexed" ? createRedactionScope() : undefined);
    return new DeepWalk(engine, scope, redactText, sensitive, depthLimit).walk(root, 0);
  }) as DeepRedactor;
  Object.defineProperty(redactDeepValue, "engine", { value: engine });
  return redactDeepValue;
}

/**
 * Whether a key marks its value as secret: the built-in list, plus `sensitiveKeys` (exact
 * names, case-insensitive, or regular expressions). Answers are cached (keys repeat).
 */
function sensitiveKeyMatcher(sensitiveKeys: unknown, name: string): (key: string) => boolean {
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
  const keyCache = new Map<string, boolean>();
  return (key: string): boolean => {
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
  };
}

/**
 * One deep redaction: walks a value and returns a redacted copy. Cycles stay cycles (`seen`
 * maps each object to its copy); one scope numbers indexed placeholders across the value.
 */
class DeepWalk {
  readonly #seen = new Map<object, unknown>();

  constructor(
    readonly engine: RedactionEngine,
    readonly scope: RedactionScope | undefined,
    readonly redactText: (value: string, scope: RedactionScope | undefined) => string,
    readonly sensitive: (key: string) => boolean,
    readonly depthLimit: number,
  ) {}

  text(value: string): string {
    return this.redactText(value, this.scope);
  }

  /** What a value under a sensitive key becomes, whatever it holds. */
  secretValue(value: unknown): unknown {
    if (value === null || value === undefined || typeof value === "boolean" || value === "")
      return value;
    const engine = this.engine;
    const finding = { type: "SECRET", start: 0, end: 0, rule: "sensitive-key", score: 1 };
    if (engine.placeholder === "type") return "[SECRET]";
    if (engine.placeholder === "indexed")
      return (this.scope ?? createRedactionScope()).token("SECRET", value);
    return engine.placeholder(finding, typeof value === "string" ? value : String(value));
  }

  placeholderOf(type: string, value: unknown): unknown {
    const engine = this.engine;
    const written = typeof value === "string" ? value : String(value);
    if (engine.placeholder === "type") return `[${type}]`;
    if (engine.placeholder === "indexed")
      return (this.scope ?? createRedactionScope()).token(type, value);
    return engine.placeholder(
      { type, start: 0, end: written.length, rule: "deep", score: 1 },
      written,
    );
  }

  /** Numbers and BigInts: a card number stored as a number is still a card number. */
  number(value: number | bigint, key: string | undefined): unknown {
    if (typeof value === "number") {
      // Most numbers in spans are counts, sizes and times: no string is made for them.
      if (!Number.isInteger(value)) return value;
      const magnitude = Math.abs(value);
      if (magnitude < 1000) return value;
      if (magnitude < 1e11) {
        if (key === undefined) return value;
        const keyType = numericKeyType(key);
        return keyType === undefined ? value : this.placeholderOf(keyType, value);
      }
    }
    const digits = digitsOf(value.toString());
    if (digits.length >= 12 && digits.length <= 19 && isCardNumber(digits))
      return this.placeholderOf("CREDIT_CARD", value);
    if (digits.length < 4 || key === undefined) return value;
    const keyType = numericKeyType(key);
    if (keyType !== undefined) return this.placeholderOf(keyType, value);
    return value;
  }

  /**
   * Bytes: decoded as UTF-8 and redacted as text when valid (same type back, re-encoded);
   * bytes that are not UTF-8 are read as Latin-1, and replaced whole if that holds PII.
   */
  bytes(value: Uint8Array): unknown {
    const decoded = decodeUtf8(value);
    const isBuffer = typeof Buffer !== "undefined" && Buffer.isBuffer(value);
    if (decoded !== undefined) {
      const redactedText = this.text(decoded);
      if (redactedText === decoded) return isBuffer ? Buffer.from(value) : value.slice();
      const encoded = ENCODER.encode(redactedText);
      return isBuffer ? Buffer.from(encoded) : encoded;
    }
    let latin1 = "";
    for (let index = 0; index < value.length; index += 8192)
      latin1 += String.fromCharCode(...value.subarray(index, index + 8192));
    if (this.engine.find(latin1).length === 0) return isBuffer ? Buffer.from(value) : value.slice();
    return `[BINARY ${value.length} bytes with personal data]`;
  }

  walk(value: unknown, depth: number, key?: string): unknown {
    if (typeof value === "string") return this.text(value);
    if (typeof value === "number" || typeof value === "bigint") return this.number(value, key);
    if (typeof value !== "object" || value === null) return value;
    if (this.#seen.has(value)) return this.#seen.get(value);
    if (depth >= this.depthLimit) return "[TRUNCATED]";
    if (Array.isArray(value)) {
      const copy: unknown[] = [];
      this.#seen.set(value, copy);
      for (const item of value) copy.push(this.walk(item, depth + 1));
      return copy;
    }
    if (value instanceof Date) return new Date(value.getTime());
    if (value instanceof Uint8Array) return this.bytes(value);
    if (value instanceof ArrayBuffer) {
      const copy = this.bytes(new Uint8Array(value));
      return copy instanceof Uint8Array ? copy.buffer : copy;
    }
    if (value instanceof DataView) {
      const copy = this.bytes(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
      return copy instanceof Uint8Array ? new DataView(copy.buffer) : copy;
    }
    if (ArrayBuffer.isView(value)) {
      // Numeric arrays (Int32Array, Float64Array, BigInt64Array): each number as above.
      const items = Array.from(value as unknown as ArrayLike<number | bigint>);
      const redacted = items.map((item) => this.number(item, key));
      return redacted.every((item, index) => item === items[index])
        ? (value as unknown as { slice(): unknown }).slice()
        : redacted;
    }
    if (value instanceof Map) return this.map(value, depth);
    if (value instanceof Set) {
      const copy = new Set<unknown>();
      this.#seen.set(value, copy);
      for (const item of value) copy.add(this.walk(item, depth + 1));
      return copy;
    }
    if (value instanceof Error) return this.error(value, depth);
    const prototype = Object.getPrototypeOf(value) as object | null;
    const plain = prototype === Object.prototype || prototype === null;
    const record = value as Record<string, unknown>;
    if (!plain && typeof record.toJSON === "function") {
      // What a logger would write for it (URL, Decimal, Buffer-like wrappers).
      const json = (record.toJSON as () => unknown)();
      const copy = this.walk(json, depth + 1);
      this.#seen.set(value, copy);
      return copy;
    }
    const copy: Record<string, unknown> = prototype === null ? Object.create(null) : {};
    this.#seen.set(value, copy);
    this.copyProperties(record, copy, depth);
    return copy;
  }

  map(value: Map<unknown, unknown>, depth: number): Map<unknown, unknown> {
    const copy = new Map<unknown, unknown>();
    this.#seen.set(value, copy);
    for (const [key, item] of value) {
      const isSecret = typeof key === "string" && this.sensitive(key);
      copy.set(
        this.walk(key, depth + 1),
        isSecret
          ? this.secretValue(item)
          : this.walk(item, depth + 1, typeof key === "string" ? key : undefined),
      );
    }
    return copy;
  }

  /** An Error's copy: same prototype; name, message, stack, errors and cause kept non-enumerable. */
  error(value: Error, depth: number): unknown {
    const copy = Object.create(Object.getPrototypeOf(value) as object) as Record<string, unknown>;
    this.#seen.set(value, copy);
    for (const key of ["name", "message", "stack", "errors"] as const) {
      const field = (value as unknown as Record<string, unknown>)[key];
      if (field !== undefined) {
        Object.defineProperty(copy, key, {
          value: this.walk(field, depth + 1),
          writable: true,
          configurable: true,
          enumerable: false,
        });
      }
    }
    if ("cause" in value) {
      Object.defineProperty(copy, "cause", {
        value: this.walk(value.cause, depth + 1),
        writable: true,
        configurable: true,
        enumerable: false,
      });
    }
    this.copyProperties(value as unknown as Record<string, unknown>, copy, depth);
    return copy;
  }

  copyProperties(
    source: Record<string, unknown>,
    target: Record<string, unknown>,
    depth: number,
  ): void {
    for (const key of Object.keys(source)) {
      let item: unknown;
      try {
        item = source[key];
      } catch {
        item = "[UNREADABLE]";
      }
      const redactedKey = this.text(key);
      target[redactedKey] = this.sensitive(key)
        ? this.secretValue(item)
        : this.walk(item, depth + 1, key);
    }
  }
}

/**
 * Redacts every string in a value, deeply: objects, arrays, Maps, Sets and Errors (message,
 * stack, cause, `errors`) are copied (the input is never mutated), cycles are kept as cycles
 * in the copy, and values under sensitive keys (`password`, `token`, `authorization`,
 * `cookie`, `api_key`, `secret`, …) are replaced whatever they hold. Object keys are redacted
 * too. Class instances with `toJSON` are redacted as what they serialise to, others as a copy
 * of their own properties. `Buffer`s and `Uint8Array`s are decoded as UTF-8 and redacted as
 * text (the same type comes back); numbers and BigInts that are card numbers, and numbers
 * under a personal key (`phone`, `ssn`, `card`, `dob`, …), are replaced.
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
