import { confusableKeys, nameProblem } from "./name-skeleton.js";

/** Why the proxy refused a name an MCP server listed. */
export interface NameRefusal {
  /** The name as the server listed it. */
  name: string;
  reason:
    | "invalid_name"
    | "reserved_name"
    | "duplicate_name"
    | "confusable_name"
    | "confusable_with_policy";
  message: string;
}

/** Options of `vetNames`. */
export interface VetNamesOptions {
  /** What the names are, for messages: `tool`, `prompt`, `resource`. */
  kind: string;
  /**
   * Tool-name globs the operator wrote (policy rules, `tools` flags, `protectedNames`): a name
   * that is not matched by one but looks like it (same skeleton, any case) is refused.
   */
  protectedPatterns: readonly string[];
  /** How gates see a name of this kind: `prompt:` + name, `resource:` + URI, or the tool name. */
  gateName: (name: string) => string;
  /** A name this kind may not use (e.g. a tool named `prompt:x`). */
  reserved?: (name: string) => string | undefined;
  maxLength?: number;
}

/**
 * Checks the names one MCP server listed for one kind (tools, prompts, resource URIs) before
 * the host sees any of them: a name with invisible or control characters, or that NFKC
 * changes, is refused; a name listed twice is refused (every copy); of names that are
 * confusable (same UTS #39 skeleton of their NFKC form, or of its lower case), each is refused
 * unless a protected pattern matches it exactly (then the rule covers it); a name confusable with a protected pattern (a policy rule's tool glob) that the
 * pattern itself does not match is refused. Returns the refusals by index in `names`.
 */
export function vetNames(
  names: readonly unknown[],
  options: VetNamesOptions,
): Map<number, NameRefusal> {
  const refused = new Map<number, NameRefusal>();
  const { kind } = options;
  const label = (name: unknown) => `${kind} ${JSON.stringify(name)}`;
  const counts = new Map<string, number>();
  for (const [index, name] of names.entries()) {
    const problem =
      nameProblem(name, options.maxLength) ?? options.reserved?.(name as string) ?? undefined;
    if (problem) {
      refused.set(index, {
        name: typeof name === "string" ? name : String(name),
        reason: nameProblem(name, options.maxLength) ? "invalid_name" : "reserved_name",
        message: `${label(name)} is refused: ${problem}`,
      });
      continue;
    }
    counts.set(name as string, (counts.get(name as string) ?? 0) + 1);
  }
  for (const [index, name] of names.entries()) {
    if (refused.has(index)) continue;
    const count = counts.get(name as string) ?? 0;
    if (count > 1)
      refused.set(index, {
        name: name as string,
        reason: "duplicate_name",
        message: `${label(name)} is refused: the server lists it ${count} times, so which definition a call reaches is the server's choice`,
      });
  }
  // Confusable pairs among the distinct names left.
  const byKey = new Map<string, Set<string>>();
  const distinct = [...counts.entries()].filter(([, count]) => count === 1).map(([name]) => name);
  for (const name of distinct)
    for (const [which, key] of confusableKeys(name).entries()) {
      const group = byKey.get(`${which}:${key}`) ?? new Set<string>();
      group.add(name);
      byKey.set(`${which}:${key}`, group);
    }
  const twins = new Map<string, Set<string>>();
  for (const group of byKey.values())
    if (group.size > 1)
      for (const name of group) {
        const others = twins.get(name) ?? new Set<string>();
        for (const other of group) if (other !== name) others.add(other);
        twins.set(name, others);
      }
  const patterns = options.protectedPatterns.map(compileProtected);
  const protectedExactly = (name: string) =>
    patterns.some((pattern) => pattern.literal.test(options.gateName(name)));
  for (const [index, name] of names.entries()) {
    if (refused.has(index) || typeof name !== "string") continue;
    const others = twins.get(name);
    // Of look-alikes, one a rule names exactly stays (the rule applies to it); the rest go.
    if (others && !protectedExactly(name)) {
      refused.set(index, {
        name,
        reason: "confusable_name",
        message: `${label(name)} is refused: it looks like ${[...others].map((other) => JSON.stringify(other)).join(", ")} (same Unicode skeleton), so a call could reach the one nobody meant`,
      });
      continue;
    }
    const gateName = options.gateName(name);
    const keys = confusableKeys(gateName);
    for (const pattern of patterns) {
      if (pattern.literal.test(gateName)) continue;
      if (
        pattern.keyed.some((regex, which) => regex.test(keys[which]!)) ||
        lettersOutsideTable(gateName, pattern.source)
      ) {
        refused.set(index, {
          name,
          reason: "confusable_with_policy",
          message: `${label(name)} is refused: it looks like ${JSON.stringify(pattern.source)}, which a policy rule or the proxy's options name, but does not match it (rules match names exactly, case included), so the rule would not apply to it`,
        });
        break;
      }
    }
  }
  return refused;
}

/**
 * A look-alike the confusables table does not list (`send_emaił`, `send_emaꟾl`): a name that is
 * not plain ASCII but is a protected name (one with no wildcard) with each non-ASCII letter
 * swapped for another, or with non-ASCII letters added, compared case-insensitively.
 */
function lettersOutsideTable(name: string, protectedName: string): boolean {
  if (/[*?{}\\]/.test(protectedName)) return false;
  const stripped = name.normalize("NFD").replace(/\p{M}/gu, "");
  const target = protectedName.toLowerCase();
  const lower = stripped.toLowerCase();
  // Only marks (or case) set it apart: "send_emaiḷ" is "send_email" with a dot below.
  if (lower === target) return name !== protectedName;
  if (!/[^\x20-\x7e]/.test(stripped)) return false;
  if (lower.replace(/[^\x20-\x7e]/g, "") === target) return true;
  const letters = [...lower];
  if (letters.length !== [...target].length) return false;
  return [...target].every(
    (char, index) => letters[index] === char || /[^\x20-\x7e]/.test(letters[index]!),
  );
}

interface ProtectedPattern {
  source: string;
  literal: RegExp;
  /** The pattern with each literal piece replaced by its confusable keys (one regex per key). */
  keyed: [RegExp, RegExp];
}

type Piece = { literal: string } | { wild: "*" | "?" };

/** Compiles a tool-name glob (`*`, `?`, `{a,b}`, `\` escapes, as the policy's globs). */
function compileProtected(source: string): ProtectedPattern {
  const alternatives = expandBraces(source).map(piecesOf);
  // In skeleton space one character may stand for several (m is rn): `?` takes up to four.
  const build = (piece: (text: string) => string, one: string) =>
    new RegExp(
      `^(?:${alternatives
        .map((pieces) =>
          pieces
            .map((item) =>
              "literal" in item
                ? escapeRegExp(piece(item.literal))
                : item.wild === "*"
                  ? "[\\s\\S]*"
                  : one,
            )
            .join(""),
        )
        .join("|")})$`,
      "u",
    );
  return {
    source,
    literal: build((text) => text, "[\\s\\S]"),
    keyed: [
      build((text) => confusableKeys(text)[0], "[\\s\\S]{1,4}"),
      build((text) => confusableKeys(text)[1], "[\\s\\S]{1,4}"),
    ],
  };
}

function piecesOf(alternative: string): Piece[] {
  const pieces: Piece[] = [];
  let literal = "";
  for (let index = 0; index < alternative.length; index += 1) {
    const character = alternative[index]!;
    if (character === "\\" && index + 1 < alternative.length) {
      literal += alternative[index + 1];
      index += 1;
    } else if (character === "*" || character === "?") {
      if (literal) pieces.push({ literal });
      literal = "";
      pieces.push({ wild: character });
    } else literal += character;
  }
  if (literal) pieces.push({ literal });
  return pieces;
}

/** `a{b,c}d` → `abd`, `acd` (groups may nest; at most 256 alternatives, as the policy's globs). */
function expandBraces(pattern: string): string[] {
  let depth = 0;
  let open = -1;
  for (let index = 0; index < pattern.length; index += 1) {
    const character = pattern[index];
    if (character === "\\") index += 1;
    else if (character === "{") {
      if (depth === 0) open = index;
      depth += 1;
    } else if (character === "}" && depth > 0) {
      depth -= 1;
      if (depth === 0) {
        const inner = pattern.slice(open + 1, index);
        const head = pattern.slice(0, open);
        const tail = pattern.slice(index + 1);
        const options = splitTopLevel(inner);
        const out: string[] = [];
        for (const option of options)
          for (const rest of expandBraces(`${option}${tail}`)) {
            out.push(`${head}${rest}`);
            if (out.length >= 256) return out;
          }
        return out;
      }
    }
  }
  return [pattern];
}

function splitTopLevel(inner: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < inner.length; index += 1) {
    const character = inner[index];
    if (character === "\\") index += 1;
    else if (character === "{") depth += 1;
    else if (character === "}") depth -= 1;
    else if (character === "," && depth === 0) {
      parts.push(inner.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(inner.slice(start));
  return parts;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
