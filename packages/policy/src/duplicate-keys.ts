/**
 * Finds the first object key that appears twice in JSON text. `JSON.parse` keeps the last of
 * two equal keys, so `{"effect":"deny","effect":"allow"}` would load as allow while a reviewer
 * reads deny; a policy document must not be able to say two things.
 */

/** Where a duplicated key is: the JSON path of the second occurrence, and the key. */
export interface DuplicateKey {
  /** The path in the style of policy errors: `rules[0].effect`. */
  path: string;
  key: string;
}

/**
 * Scans JSON text that `JSON.parse` already accepted and returns the first duplicated key, or
 * `undefined`. Keys are compared after unescaping (`"\u0065ffect"` is `"effect"`).
 */
export function findDuplicateKey(text: string): DuplicateKey | undefined {
  type Frame =
    | { kind: "object"; keys: Set<string>; key: string | undefined }
    | { kind: "array"; index: number };
  const stack: Frame[] = [];
  const pathOf = (last: string): string => {
    let out = "";
    for (const frame of stack) {
      if (frame.kind === "array") out += `[${frame.index}]`;
      else if (frame.key !== undefined && frame !== stack[stack.length - 1])
        out += out === "" ? frame.key : `.${frame.key}`;
    }
    return out === "" ? last : `${out}.${last}`;
  };
  let expectKey = false;
  for (let at = 0; at < text.length; at += 1) {
    const char = text.charCodeAt(at);
    if (char === 0x22 /* " */) {
      let end = at + 1;
      while (end < text.length) {
        const next = text.charCodeAt(end);
        if (next === 0x5c /* \ */) end += 2;
        else if (next === 0x22) break;
        else end += 1;
      }
      const top = stack[stack.length - 1];
      if (expectKey && top?.kind === "object") {
        const raw = text.slice(at, end + 1);
        const key = raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (top.keys.has(key)) return { path: pathOf(key), key };
        top.keys.add(key);
        top.key = key;
        expectKey = false;
      }
      at = end;
    } else if (char === 0x7b /* { */) {
      stack.push({ kind: "object", keys: new Set(), key: undefined });
      expectKey = true;
    } else if (char === 0x5b /* [ */) {
      stack.push({ kind: "array", index: 0 });
    } else if (char === 0x7d /* } */ || char === 0x5d /* ] */) {
      stack.pop();
    } else if (char === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.kind === "object") expectKey = true;
      else if (top?.kind === "array") top.index += 1;
    }
  }
  return undefined;
}
