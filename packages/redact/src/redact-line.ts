import type { DeepRedactor } from "./redact-deep.js";

/**
 * Redacts one serialised log line. A JSON line is parsed, redacted deeply (so sensitive keys
 * count and no placeholder can break the JSON) and written back; anything else is redacted
 * as text. A trailing newline is kept. @internal
 */
export function redactLine(line: string, deep: DeepRedactor): string {
  const trimmed = line.trimEnd();
  const newline = line.slice(trimmed.length);
  if (trimmed.startsWith("{") && trimmed.endsWith("}")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined) return JSON.stringify(deep(parsed)) + newline;
  }
  return deep.engine.redact(trimmed).text + newline;
}
