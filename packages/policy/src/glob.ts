import { InvalidArgumentError } from "@loopguard/core";

/** A compiled tool-name glob. */
export interface GlobMatcher {
  /** The glob as written. */
  readonly pattern: string;
  /** Whether `name` matches the whole glob. */
  test(name: string): boolean;
}

/** At most this many alternatives after expanding `{a,b}` groups (keeps compile time bounded). */
const maxAlternatives = 256;

/**
 * Compiles a glob over tool names: `*` matches any run of characters (also empty), `?` exactly
 * one, `{a,b}` either alternative (groups may nest), and `\` escapes the next character. There
 * are no regular expressions: each alternative is matched by anchored segment search, in time
 * linear in the name times the pattern length, so no input can make it backtrack badly.
 *
 * @example
 * compileGlob("send_{email,sms}").test("send_sms"); // true
 */
export function compileGlob(pattern: string): GlobMatcher {
  if (typeof pattern !== "string" || pattern.length === 0 || pattern.length > 512) {
    throw new InvalidArgumentError(
      `[policy] tool glob ${JSON.stringify(pattern)} is invalid: use a non-empty string of at most 512 characters such as "send_*"`,
    );
  }
  const alternatives = expandBraces(pattern);
  const unique = [...new Set(alternatives)];
  const matchers = unique.map(compileAlternative);
  if (matchers.some((matcher) => matcher === matchAll)) return { pattern, test: () => true };
  if (matchers.length === 1) return { pattern, test: matchers[0]! };
  const exact = new Set<string>();
  const others: Array<(name: string) => boolean> = [];
  for (const [index, matcher] of matchers.entries()) {
    const literal = literalOf(unique[index]!);
    if (literal !== undefined) exact.add(literal);
    else others.push(matcher);
  }
  return {
    pattern,
    test: (name) => {
      if (exact.has(name)) return true;
      for (const matcher of others) if (matcher(name)) return true;
      return false;
    },
  };
}

/** Compiles a list of globs into one matcher (any of them). */
export function compileGlobs(patterns: string | readonly string[], what: string): GlobMatcher {
  const list = typeof patterns === "string" ? [patterns] : patterns;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidArgumentError(
      `[policy] ${what} must be a tool glob or a non-empty array of globs, got ${JSON.stringify(patterns)}`,
    );
  }
  for (const item of list) {
    if (typeof item !== "string")
      throw new InvalidArgumentError(
        `[policy] ${what} must hold only strings, got ${JSON.stringify(item)}`,
      );
  }
  try {
    if (list.length === 1) return compileGlob(list[0]!);
    const matcher = compileGlob(`{${list.map(escapeForGroup).join(",")}}`);
    return { pattern: list.join(","), test: matcher.test };
  } catch (error) {
    if (error instanceof InvalidArgumentError)
      throw new InvalidArgumentError(error.message.replace(/^\[policy\] /, `[policy] ${what}: `));
    throw error;
  }
}

function escapeForGroup(pattern: string): string {
  // A comma at the top level of one pattern would split it inside the group; escape it.
  let depth = 0;
  let out = "";
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index]!;
    if (char === "\\") {
      out += char + (pattern[index + 1] ?? "");
      index += 1;
      continue;
    }
    if (char === "{") depth += 1;
    if (char === "}") depth -= 1;
    out += char === "," && depth === 0 ? "\\," : char;
  }
  return out;
}

const matchAll = (_name: string) => true;

function literalOf(alternative: string): string | undefined {
  let out = "";
  for (let index = 0; index < alternative.length; index += 1) {
    const char = alternative[index]!;
    if (char === "*" || char === "?") return undefined;
    if (char === "\\") {
      index += 1;
      out += alternative[index] ?? "";
    } else out += char;
  }
  return out;
}

/** Expands `{a,b}` groups (nested allowed) into plain alternatives, keeping escapes. */
function expandBraces(pattern: string): string[] {
  const fail = (why: string): never => {
    throw new InvalidArgumentError(
      `[policy] tool glob ${JSON.stringify(pattern)} is invalid: ${why}`,
    );
  };
  const parse = (start: number, inGroup: boolean): { alternatives: string[]; end: number } => {
    let current: string[] = [""];
    const done: string[] = [];
    let index = start;
    while (index < pattern.length) {
      const char = pattern[index]!;
      if (char === "\\") {
        if (index + 1 >= pattern.length) fail("it ends with a lone backslash");
        const escaped = pattern.slice(index, index + 2);
        current = current.map((prefix) => prefix + escaped);
        index += 2;
        continue;
      }
      if (char === "{") {
        const group = parse(index + 1, true);
        const next: string[] = [];
        for (const prefix of current)
          for (const alternative of group.alternatives) next.push(prefix + alternative);
        if (next.length + done.length > maxAlternatives)
          fail(`its {..} groups expand to more than ${maxAlternatives} alternatives`);
        current = next;
        index = group.end + 1;
        continue;
      }
      if (inGroup && char === ",") {
        done.push(...current);
        current = [""];
        index += 1;
        continue;
      }
      if (char === "}") {
        if (!inGroup) fail('it has a "}" without a matching "{"');
        return { alternatives: [...done, ...current], end: index };
      }
      current = current.map((prefix) => prefix + char);
      index += 1;
    }
    if (inGroup) fail('it has a "{" without a matching "}"');
    return { alternatives: [...done, ...current], end: index };
  };
  return parse(0, false).alternatives;
}

/** Compiles one brace-free alternative: literal segments with `?` between `*`s. */
function compileAlternative(alternative: string): (name: string) => boolean {
  const segments: Array<Array<string | null>> = [[]];
  for (let index = 0; index < alternative.length; index += 1) {
    let char = alternative[index]!;
    if (char === "*") {
      segments.push([]);
      continue;
    }
    if (char === "\\") {
      index += 1;
      char = alternative[index]!;
      segments[segments.length - 1]!.push(char);
      continue;
    }
    segments[segments.length - 1]!.push(char === "?" ? null : char);
  }
  // segments[0] is anchored at the start, the last at the end; the ones between float.
  const first = segments[0]!;
  if (segments.length === 1) {
    return (name) => name.length === first.length && segmentAt(name, 0, first);
  }
  const last = segments[segments.length - 1]!;
  const middle = segments.slice(1, -1).filter((segment) => segment.length > 0);
  if (first.length === 0 && last.length === 0 && middle.length === 0) return matchAll;
  const minLength =
    first.length + last.length + middle.reduce((sum, segment) => sum + segment.length, 0);
  return (name) => {
    if (name.length < minLength) return false;
    if (!segmentAt(name, 0, first)) return false;
    const tailStart = name.length - last.length;
    if (!segmentAt(name, tailStart, last)) return false;
    // Leftmost placement of each floating segment is always safe for `*` globs.
    let cursor = first.length;
    for (const segment of middle) {
      let found = -1;
      for (let at = cursor; at + segment.length <= tailStart; at += 1) {
        if (segmentAt(name, at, segment)) {
          found = at;
          break;
        }
      }
      if (found < 0) return false;
      cursor = found + segment.length;
    }
    return true;
  };
}

function segmentAt(name: string, at: number, segment: ReadonlyArray<string | null>): boolean {
  if (at < 0 || at + segment.length > name.length) return false;
  for (let index = 0; index < segment.length; index += 1) {
    const expected = segment[index];
    if (expected !== null && name[at + index] !== expected) return false;
  }
  return true;
}
