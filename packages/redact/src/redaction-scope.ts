/**
 * Hands out stable indexed tokens (`<EMAIL_1>`) for redacted values: the same value of the
 * same type gets the same token for the life of the scope. A `Vault` is a scope that can
 * also reveal its tokens; write your own to keep tokens in a store of your choice.
 */
export interface RedactionScope {
  /** The token for `value` of `type`, such as `<EMAIL_1>`; the same input gives the same token. */
  token(type: string, value: unknown): string;
}

/**
 * A scope that remembers values only in memory and cannot reveal them; what `redact` uses
 * for `placeholder: "indexed"` when no scope is given (tokens are stable within one call).
 *
 * @example
 * const scope = createRedactionScope();
 * redact("a@b.io", { placeholder: "indexed", scope }).text; // "<EMAIL_1>"
 * redact("a@b.io again", { placeholder: "indexed", scope }).text; // "<EMAIL_1> again"
 */
export function createRedactionScope(): RedactionScope {
  const tokens = new Map<string, string>();
  const counters = new Map<string, number>();
  return {
    token(type, value) {
      const key = typeof value === "string" ? `${type}\u0000${value}` : undefined;
      if (key !== undefined) {
        const known = tokens.get(key);
        if (known !== undefined) return known;
      }
      const count = (counters.get(type) ?? 0) + 1;
      counters.set(type, count);
      const token = `<${type}_${count}>`;
      if (key !== undefined) tokens.set(key, token);
      return token;
    },
    toJSON() {
      return { kind: "redaction-scope", size: tokens.size };
    },
  } as RedactionScope;
}
