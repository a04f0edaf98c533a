/**
 * The JSONL log format: one JSON event per line, `{"seq":0,"at":1733,"type":"run-start",...}`,
 * each line ending in `\n`. Bytes after the last `\n` are a torn tail (a write that never
 * completed, so an append that never resolved).
 */
import type { StoredEvent, StoredEventInput } from "@loopguard/core";
import { CorruptLogError, InvalidArgumentError } from "@loopguard/core";

const newline = 0x0a;
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Serialises an event without its seq, as `{"at":...,"type":...,...}`; the seq is put in front
 * when the store assigns it. Throws `InvalidArgumentError` for what JSON cannot hold.
 */
export function encodeEventBody(event: StoredEventInput, runId: string, index: number): string {
  if (
    typeof event !== "object" ||
    event === null ||
    typeof event.type !== "string" ||
    (event.type as string) === ""
  ) {
    throw new InvalidArgumentError(
      `[checkpoint] append to run ${runId}: event ${index} must be an object with a string type`,
    );
  }
  if (typeof event.at !== "number" || !Number.isFinite(event.at)) {
    throw new InvalidArgumentError(
      `[checkpoint] append to run ${runId}: event ${index} (${event.type}) needs a finite number \`at\` (milliseconds since the epoch)`,
    );
  }
  const { at, type, seq: _ignored, ...rest } = event as StoredEventInput & { seq?: unknown };
  try {
    return JSON.stringify({ at, type, ...rest });
  } catch (error) {
    throw new InvalidArgumentError(
      `[checkpoint] append to run ${runId}: event ${index} (${type}) cannot be stored as JSON: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** One line of the log: the body with its seq in front, and the newline. */
export function lineOf(seq: number, body: string): string {
  return `{"seq":${seq},${body.slice(1)}\n`;
}

/** What `parseLog` found in a piece of a log. */
export interface ParsedLog {
  events: StoredEvent[];
  /** Bytes of complete lines (every one parsed). */
  completeBytes: number;
  /** Bytes after the last newline: a torn tail, or a write in flight. */
  tornBytes: number;
}

/**
 * Parses the complete lines of `buffer`, a piece of `file` that starts at the line of event
 * `firstSeq`. Throws `CorruptLogError` naming `file:line` for a line that is not one JSON event
 * with the next seq: a damaged event is an error, never skipped.
 */
export function parseLog(buffer: Buffer, file: string, firstSeq: number): ParsedLog {
  const events: StoredEvent[] = [];
  let start = 0;
  let seq = firstSeq;
  for (;;) {
    const end = buffer.indexOf(newline, start);
    if (end === -1) break;
    events.push(parseLine(buffer.subarray(start, end), file, seq));
    seq += 1;
    start = end + 1;
  }
  return { events, completeBytes: start, tornBytes: buffer.length - start };
}

function parseLine(bytes: Buffer, file: string, seq: number): StoredEvent {
  const line = seq + 1;
  const fail = (what: string, cause?: unknown): never => {
    throw new CorruptLogError(
      `[checkpoint] ${file}:${line}: ${what}; loopguard never skips a damaged event: restore the file from a backup or repair line ${line} by hand (each line is one JSON event {"seq","at","type",...})`,
      cause === undefined ? undefined : { cause },
    );
  };
  let text = "";
  try {
    text = decoder.decode(bytes);
  } catch (error) {
    fail("the line is not valid UTF-8", error);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    fail(`the line is not valid JSON (${(error as Error).message})`, error);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return fail("the line is not a JSON object");
  const event = value as Record<string, unknown>;
  if (event.seq !== seq)
    return fail(`the event has seq ${JSON.stringify(event.seq)}, expected ${seq}`);
  if (typeof event.type !== "string") return fail("the event has no string type");
  if (typeof event.at !== "number") return fail("the event has no number at");
  return event as unknown as StoredEvent;
}
