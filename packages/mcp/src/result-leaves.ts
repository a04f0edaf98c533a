import { createHash } from "node:crypto";
import type { OutputEnvelope, Provenance, Scanner, ScanResult } from "@loopguard/core";

/** One string a server returned that a model may read: a text part, a resource's text, a structured value. */
export interface ResultLeaf {
  /** Where it is, e.g. `content[0].text`, `structuredContent.items[2].title`. */
  readonly path: string;
  readonly value: string;
  /** Replaces the string in the result (the result's shape never changes). */
  set(value: string): void;
}

/** What a result of each kind is, for its leaves. */
export type ResultKind = "tool" | "resource" | "prompt" | "sampling";

/**
 * The string leaves of an MCP result, in reading order: for a tool, each text part (and an
 * embedded resource's text, a resource link's title and description) then every string in
 * `structuredContent`; for `resources/read`, each text content; for `prompts/get`, the
 * description and each message's text; for a sampling answer, its text. Binary data (images, audio, blobs) and URIs are not
 * leaves.
 */
export function resultLeaves(result: Record<string, unknown>, kind: ResultKind): ResultLeaf[] {
  const leaves: ResultLeaf[] = [];
  const at = (holder: Record<string, unknown>, key: string, path: string) => {
    if (typeof holder[key] === "string")
      leaves.push({
        path,
        get value() {
          return holder[key] as string;
        },
        set(value) {
          holder[key] = value;
        },
      });
  };
  const part = (content: unknown, path: string) => {
    if (!isRecord(content)) return;
    if (content.type === "text") at(content, "text", `${path}.text`);
    else if (content.type === "resource" && isRecord(content.resource))
      at(content.resource, "text", `${path}.resource.text`);
    else if (content.type === "resource_link") {
      at(content, "title", `${path}.title`);
      at(content, "description", `${path}.description`);
    }
  };
  if (kind === "tool") {
    if (Array.isArray(result.content))
      for (const [index, content] of result.content.entries()) part(content, `content[${index}]`);
    if (result.structuredContent !== undefined)
      walk(result, "structuredContent", "structuredContent", leaves);
  } else if (kind === "resource") {
    if (Array.isArray(result.contents))
      for (const [index, content] of result.contents.entries())
        if (isRecord(content)) at(content, "text", `contents[${index}].text`);
  } else if (kind === "sampling") {
    part(result.content, "content");
  } else {
    at(result, "description", "description");
    if (Array.isArray(result.messages))
      for (const [index, message] of result.messages.entries())
        if (isRecord(message)) part(message.content, `messages[${index}].content`);
  }
  return leaves;
}

function walk(
  holder: Record<string, unknown> | unknown[],
  key: string | number,
  path: string,
  leaves: ResultLeaf[],
): void {
  const value = (holder as Record<string | number, unknown>)[key];
  if (typeof value === "string") {
    leaves.push({
      path,
      get value() {
        return (holder as Record<string | number, unknown>)[key] as string;
      },
      set(next) {
        (holder as Record<string | number, unknown>)[key] = next;
      },
    });
  } else if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1)
      walk(value, index, `${path}[${index}]`, leaves);
  } else if (isRecord(value)) {
    for (const child of Object.keys(value)) walk(value, child, `${path}.${child}`, leaves);
  }
}

/**
 * The text a scanner and the run's log see of a result: its leaves, one per line; a structured
 * value that repeats a text part (servers often send both) is left out the second time.
 */
export function leavesText(leaves: readonly ResultLeaf[]): string {
  // Text parts are few: a structured value is compared with them only when a length matches.
  const parts: string[] = [];
  const lengths = new Set<number>();
  for (const leaf of leaves)
    if (!leaf.path.startsWith("structuredContent")) {
      parts.push(leaf.value);
      lengths.add(leaf.value.length);
    }
  const out: string[] = [];
  for (const leaf of leaves) {
    const value = leaf.value;
    if (value === "") continue;
    if (
      lengths.has(value.length) &&
      leaf.path.startsWith("structuredContent") &&
      parts.includes(value)
    )
      continue;
    out.push(value);
  }
  return out.join("\n");
}

/** What `capLeaves` cut. */
export interface LeavesCut {
  /** Characters of text the result had. */
  chars: number;
  removedChars: number;
  /** SHA-256 (hex) of the whole result as the server sent it (JSON). */
  sha256: string;
}

/**
 * Keeps at most `maxChars` characters of a result's text leaves, in reading order: the leaf
 * that crosses the limit keeps its head and a marker naming what was cut and the digest of the
 * whole result; later leaves become empty strings. Strings stay strings, so the shape holds.
 */
export function capLeaves(
  result: Record<string, unknown>,
  leaves: readonly ResultLeaf[],
  maxChars: number,
  what: string,
): LeavesCut | undefined {
  let all = 0;
  for (const leaf of leaves) all += leaf.value.length;
  if (all <= maxChars) return undefined;
  // A value that appears twice (the text part and its structured twin) counts, and is cut, once.
  const distinct = [...new Set(leaves.map((leaf) => leaf.value))];
  let total = 0;
  for (const value of distinct) total += value.length;
  if (total <= maxChars) return undefined;
  const sha256 = createHash("sha256").update(JSON.stringify(result)).digest("hex");
  const removedChars = total - maxChars;
  const marker = `\n[loopguard: ${removedChars.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} characters of this ${what} result cut (maxOutputChars ${maxChars.toLocaleString("en-US")}; sha256 ${sha256.slice(0, 16)}). Ask for less: a narrower range, a page or a filter.]`;
  const replaced = new Map<string, string>();
  let room = maxChars;
  for (const value of distinct) {
    if (value.length <= room) {
      room -= value.length;
      continue;
    }
    let end = room;
    const code = value.charCodeAt(end - 1);
    if (end > 0 && code >= 0xd800 && code <= 0xdbff) end -= 1;
    replaced.set(value, end > 0 || room === maxChars ? `${value.slice(0, end)}${marker}` : "");
    room = 0;
  }
  // The first value cut carries the marker; every later one is emptied.
  let marked = false;
  for (const [value, next] of replaced)
    if (next.endsWith(marker)) {
      if (marked) replaced.set(value, next.slice(0, -marker.length));
      marked = true;
    }
  if (!marked && replaced.size > 0) {
    const [first] = replaced.keys();
    replaced.set(first!, `${replaced.get(first!)!}${marker}`);
  }
  for (const leaf of leaves) {
    const next = replaced.get(leaf.value);
    if (next !== undefined) leaf.set(next);
  }
  return { chars: total, removedChars, sha256 };
}

/**
 * Scans each leaf on its own and wraps the flagged ones with the envelope, in place (a
 * wrapped leaf is still a string). When the whole result was flagged but no leaf alone is
 * (the injection spans leaves), every non-empty leaf is wrapped: the proxy fails closed.
 * Returns the paths wrapped.
 */
export async function envelopeLeaves(
  leaves: readonly ResultLeaf[],
  scanner: Scanner,
  envelope: OutputEnvelope,
  provenance: Provenance,
): Promise<string[]> {
  const flagged: Array<{ leaf: ResultLeaf; scan: ScanResult }> = [];
  const scans = new Map<string, ScanResult>();
  for (const leaf of leaves) {
    if (leaf.value === "") continue;
    let scan = scans.get(leaf.value);
    if (!scan) {
      try {
        scan = await scanner.scan(leaf.value, provenance);
      } catch {
        scan = {
          verdict: "suspicious",
          score: 0.5,
          findings: [{ rule: "scanner_error", start: 0, end: 0 }],
        };
      }
      scans.set(leaf.value, scan);
    }
    if (scan.verdict !== "clean") flagged.push({ leaf, scan });
  }
  const targets =
    flagged.length > 0
      ? flagged
      : leaves
          .filter((leaf) => leaf.value !== "")
          .map((leaf) => ({
            leaf,
            scan: {
              verdict: "suspicious" as const,
              score: 0.5,
              findings: [{ rule: "spans_leaves", start: 0, end: 0 }],
            },
          }));
  for (const { leaf, scan } of targets) leaf.set(envelope(leaf.value, provenance, scan));
  return targets.map(({ leaf }) => leaf.path);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
