import { compileDeepRedactor, type DeepRedactor, type RedactDeepOptions } from "./redact-deep.js";
import { RedactOptionsError } from "./redact-error.js";
import type { RedactResult } from "./redaction-engine.js";
import type { RedactionScope } from "./redaction-scope.js";

const TOKEN = /<([A-Z][A-Z0-9_]*)_(\d+)>/g;
const INSPECT = Symbol.for("nodejs.util.inspect.custom");

/** Options of `createVault`: what to detect and which keys are secret; tokens are always indexed. */
export type VaultOptions = Omit<RedactDeepOptions, "placeholder" | "scope">;

/**
 * Reversible tokenisation: the model sees `<EMAIL_1>`, a tool gets the real value back at
 * execution time with `reveal`. The same value always gets the same token in one vault.
 * Values live only in this object's private fields: `JSON.stringify`, `util.inspect` and
 * `console.log` of a vault show its size, never a value.
 */
export class Vault implements RedactionScope {
  readonly #tokens = new Map<string, string>();
  readonly #values = new Map<string, unknown>();
  readonly #counters = new Map<string, number>();
  readonly #deep: DeepRedactor;

  /** Prefer `createVault(options)`. */
  constructor(options: VaultOptions = {}) {
    if (typeof options !== "object" || options === null) {
      throw new RedactOptionsError("[redact] createVault options must be an object.");
    }
    const record = options as Record<string, unknown>;
    if ("placeholder" in record || "scope" in record) {
      throw new RedactOptionsError(
        "[redact] createVault: a vault always writes indexed tokens with itself as the scope; drop placeholder and scope.",
      );
    }
    this.#deep = compileDeepRedactor(
      { ...options, placeholder: "indexed", scope: this },
      "createVault",
    );
  }

  /** How many distinct values the vault holds. */
  get size(): number {
    return this.#values.size;
  }

  /** The token for a value, creating one if needed (the `RedactionScope` contract). */
  token(type: string, value: unknown): string {
    const key = typeof value === "string" ? `${type}\u0000${value}` : undefined;
    if (key !== undefined) {
      const known = this.#tokens.get(key);
      if (known !== undefined) return known;
    }
    const count = (this.#counters.get(type) ?? 0) + 1;
    this.#counters.set(type, count);
    const token = `<${type}_${count}>`;
    if (key !== undefined) this.#tokens.set(key, token);
    this.#values.set(token, value);
    return token;
  }

  /** Redacts a text into tokens this vault can reveal. */
  redact(text: string): RedactResult {
    if (typeof text !== "string")
      throw new RedactOptionsError(
        "[redact] vault.redact(text) takes a string; use vault.redactDeep for other values.",
      );
    return this.#deep.engine.redact(text, this);
  }

  /**
   * Redacts a text into tokens and returns only the text: the `tokenize` that loopguard
   * core's `vault` option calls (`createAgent({ vault: createVault() })`).
   */
  tokenize(text: string): string {
    return this.redact(text).text;
  }

  /** Redacts any value deeply into tokens this vault can reveal (see `redactDeep`). */
  redactDeep(value: unknown): unknown {
    return this.#deep(value, this);
  }

  /**
   * Puts the real values back: in a string, every known token is replaced; in objects and
   * arrays, deeply, without mutating the input; a string that is exactly one token of a
   * non-string value (a number under `password`, say) becomes that value again. Unknown
   * tokens are left as they are.
   */
  reveal<T>(value: T): T {
    return this.#reveal(value, new Map()) as T;
  }

  #reveal(value: unknown, seen: Map<object, unknown>): unknown {
    if (typeof value === "string") {
      if (!value.includes("<")) return value;
      TOKEN.lastIndex = 0;
      const whole = /^<[A-Z][A-Z0-9_]*_\d+>$/.test(value);
      if (whole && this.#values.has(value)) return this.#values.get(value);
      return value.replace(TOKEN, (token) => {
        const original = this.#values.get(token);
        return original === undefined
          ? token
          : typeof original === "string"
            ? original
            : JSON.stringify(original);
      });
    }
    if (typeof value !== "object" || value === null) return value;
    if (seen.has(value)) return seen.get(value);
    if (Array.isArray(value)) {
      const copy: unknown[] = [];
      seen.set(value, copy);
      for (const item of value) copy.push(this.#reveal(item, seen));
      return copy;
    }
    if (value instanceof Map) {
      const copy = new Map<unknown, unknown>();
      seen.set(value, copy);
      for (const [key, item] of value) copy.set(this.#reveal(key, seen), this.#reveal(item, seen));
      return copy;
    }
    const prototype = Object.getPrototypeOf(value) as object | null;
    if (prototype !== Object.prototype && prototype !== null) return value;
    const copy: Record<string, unknown> = {};
    seen.set(value, copy);
    for (const [key, item] of Object.entries(value))
      copy[this.#reveal(key, seen) as string] = this.#reveal(item, seen);
    return copy;
  }

  /**
   * Forgets the values behind some tokens (the tokens keep their numbers, so no later value
   * takes them); `reveal` leaves those tokens as they are. Returns how many were dropped.
   */
  protected dropValues(tokens: ReadonlySet<string>): number {
    let dropped = 0;
    for (const token of tokens) if (this.#values.delete(token)) dropped++;
    for (const [key, token] of this.#tokens) if (tokens.has(token)) this.#tokens.delete(key);
    return dropped;
  }

  /** Forgets every value; tokens handed out before can no longer be revealed. */
  clear(): void {
    this.#tokens.clear();
    this.#values.clear();
    this.#counters.clear();
  }

  /** What `JSON.stringify` writes: the size, never a value. */
  toJSON(): { kind: "redaction-vault"; size: number } {
    return { kind: "redaction-vault", size: this.size };
  }

  /** What `String(vault)` gives. */
  toString(): string {
    return `Vault(${this.size} values)`;
  }

  /** What `util.inspect` and `console.log` show. */
  [INSPECT](): string {
    return this.toString();
  }
}

/**
 * Creates a vault for reversible tokenisation.
 *
 * How it fails: invalid options throw `RedactOptionsError`; `reveal` never throws on unknown
 * tokens, it leaves them as they are.
 *
 * @example
 * const vault = createVault();
 * const prompt = vault.redact("Refund jane@acme.io").text; // "Refund <EMAIL_1>"
 * // … the model answers with a tool call that uses <EMAIL_1> …
 * const args = vault.reveal({ to: "<EMAIL_1>" }); // { to: "jane@acme.io" }
 */
export function createVault(options: VaultOptions = {}): Vault {
  return new Vault(options);
}
