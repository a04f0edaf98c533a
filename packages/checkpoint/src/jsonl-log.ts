/**
 * The JSONL log format: one JSON event per line, `{"seq":0,"at":1733,"type":"run-start",...}`,
 * each line ending in `\n`. Bytes after the last `\n` are a torn tail (a write that never
 * completed, so an append that never resolved).
 */
import type { StoredEvent, StoredEventInput } from "@loopguard/core";
import { CorruptLogError, InvalidArgumentError } from "@loopguard/core";
import { advance, type ChainCursor, chainMember, splitChain } from "./hash-chain.js";

const newline = 0x0a;
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Refuses an event without a string type or a finite `at`, naming the run and its place. */
function checkEvent(event: StoredEventInput, runId: string, index: number): void {
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
}

/**
 * Serialises an event without its seq, as `{"at":...,"type":...,...}`; the seq is put in front
 * when the store assigns it. Throws `InvalidArgumentError` for what JSON cannot hold.
 */
export function encodeEventBody(event: StoredEventInput, runId: string, index: number): string {
  checkEvent(event, runId, index);
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

/**
 * The event as the store keeps it: a shallow copy (so a caller changing its event later changes
 * neither the bytes written nor the summary) with `seq`, `at` and `type` first and `seq` 0 until
 * the store assigns it. Throws `InvalidArgumentError` for an event without a type or a finite `at`.
 */
export function storedEvent(event: StoredEventInput, runId: string, index: number): StoredEvent {
  checkEvent(event, runId, index);
  // One copy, keys in the order of the line; a seq the caller passed is reset, keeping its place.
  const copy = { seq: 0, at: event.at, type: event.type, ...(event as object) } as StoredEvent;
  (copy as { seq: number }).seq = 0;
  return copy;
}

/**
 * Serialises a `storedEvent` copy as `{"seq":0,"at":...,"type":...,...}`, the line without its
 * seq and newline (`lineAt` puts them in). Throws `InvalidArgumentError` for what JSON cannot hold.
 */
export function encodeStored(event: StoredEvent, runId: string, index: number): string {
  try {
    return JSON.stringify(event);
  } catch (error) {
    throw new InvalidArgumentError(
      `[checkpoint] append to run ${runId}: event ${index} (${event.type}) cannot be stored as JSON: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** The length of `{"seq":0`, the start of every `encodeStored` text. */
const seqZeroLength = 8;

/** One line of the log from an `encodeStored` text: its seq put in, and the newline. */
export function lineAt(seq: number, encoded: string): string {
  return `{"seq":${seq}${encoded.slice(seqZeroLength)}\n`;
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
  /**
   * The bytes after the last newline are one whole event, valid in every way (seq, JSON, hash
   * chain), missing only its newline: it is in `events` (last), and a writer must add the
   * newline before appending rather than cut the event off.
   */
  unterminated: boolean;
  /** The chain value of each event in `events`, when the log is chained. */
  chains?: Array<string | undefined>;
}

/**
 * Parses the complete lines of `buffer`, a piece of `file` that starts at the line of event
 * `firstSeq`. Throws `CorruptLogError` naming `file:line` for a line that is not one JSON event
 * with the next seq: a damaged event is an error, never skipped.
 */
export function parseLog(
  buffer: Buffer,
  file: string,
  firstSeq: number,
  cursor?: ChainCursor,
  collectChains = false,
): ParsedLog {
  const completeBytes = buffer.lastIndexOf(newline) + 1;
  const events: StoredEvent[] = [];
  const chains: Array<string | undefined> | undefined = collectChains ? [] : undefined;
  const parsed = (): ParsedLog => {
    const result: ParsedLog = {
      events,
      completeBytes,
      tornBytes: buffer.length - completeBytes,
      unterminated: false,
    };
    if (chains) result.chains = chains;
    // The tail is a whole event missing only its newline (an editor that dropped the final
    // newline, or a write cut exactly there): it is kept, not cut off as a torn write.
    if (result.tornBytes > 0) {
      const tail = tailEvent(
        buffer.subarray(completeBytes),
        file,
        firstSeq + events.length,
        cursor,
      );
      if (tail) {
        events.push(tail.event);
        chains?.push(tail.chain);
        result.unterminated = true;
      }
    }
    return result;
  };
  if (completeBytes === 0) return parsed();
  let text: string;
  try {
    // One decode of every complete line: much faster than a decode per line.
    text = decoder.decode(buffer.subarray(0, completeBytes));
  } catch {
    // Somewhere a line is not UTF-8: decode line by line to name it.
    let start = 0;
    for (let seq = firstSeq; start < completeBytes; seq += 1) {
      const end = buffer.indexOf(newline, start);
      decodeLine(buffer.subarray(start, end), file, seq);
      start = end + 1;
    }
    throw new Error("unreachable: a line failed to decode as a whole but not alone");
  }
  let start = 0;
  // The byte offset of the current line, to hash the bytes read rather than re-encode text.
  let byteStart = 0;
  for (let seq = firstSeq; start < text.length; seq += 1) {
    const end = text.indexOf("\n", start);
    const line = text.slice(start, end);
    if (cursor) {
      const byteEnd = buffer.indexOf(newline, byteStart);
      const chainAt = chainStartOf(line);
      const chain = chainAt === -1 ? undefined : line.slice(chainAt + chainMember.length, -2);
      // The line's own damage (JSON, seq) is named first; then whether it follows the chain.
      const event = parseLine(line, file, seq);
      // The chain member is the last one added, so deleting it is cheap.
      if (chain !== undefined) delete (event as { chain?: unknown }).chain;
      const broken =
        chainAt === -1
          ? advance(cursor, line, undefined)
          : advance(
              cursor,
              buffer.subarray(byteStart, byteEnd - (line.length - chainAt)),
              chain,
              "}",
            );
      if (broken) throw failure(file, seq, broken);
      events.push(event);
      chains?.push(chain);
      byteStart = byteEnd + 1;
    } else events.push(parseLine(line, file, seq));
    start = end + 1;
  }
  return parsed();
}

/** Where a line's chain member starts (`,"chain":"sha256:` or `hmac:`, then 64 hex digits, `"}`), or -1. */
function chainStartOf(line: string): number {
  for (const scheme of ["sha256:", "hmac:"]) {
    const at = line.length - (chainMember.length + scheme.length + 66);
    if (
      at > 0 &&
      line.startsWith(chainMember, at) &&
      line.startsWith(scheme, at + chainMember.length)
    )
      return at;
  }
  return -1;
}

/** The tail after the last newline as an event, when it is one whole valid event; else undefined. */
function tailEvent(
  bytes: Buffer,
  file: string,
  seq: number,
  cursor: ChainCursor | undefined,
): { event: StoredEvent; chain: string | undefined } | undefined {
  let line: string;
  try {
    line = decoder.decode(bytes);
  } catch {
    return undefined;
  }
  const { text, chain } = cursor ? splitChain(line) : { text: line, chain: undefined };
  let event: StoredEvent;
  try {
    event = parseLine(text, file, seq);
  } catch {
    return undefined;
  }
  if (cursor) {
    // Checked on a copy: a tail that breaks the chain is a torn write, not an event.
    const probe = { ...cursor };
    if (advance(probe, text, chain) !== undefined) return undefined;
    Object.assign(cursor, probe);
  }
  return { event, chain };
}

function failure(file: string, seq: number, what: string, cause?: unknown): CorruptLogError {
  const line = seq + 1;
  const error = new CorruptLogError(
    `[checkpoint] ${file}:${line}: ${what}; loopguard never skips a damaged event: restore the file from a backup or repair line ${line} by hand (each line is one JSON event {"seq","at","type",...})`,
    cause === undefined ? undefined : { cause },
  );
  // The first bad event, for verifyLog.
  return Object.assign(error, { seq });
}

function decodeLine(bytes: Buffer, file: string, seq: number): string {
  try {
    return decoder.decode(bytes);
  } catch (error) {
    throw failure(file, seq, "the line is not valid UTF-8", error);
  }
}

function parseLine(text: string, file: string, seq: number): StoredEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw failure(file, seq, `the line is not valid JSON (${(error as Error).message})`, error);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw failure(file, seq, "the line is not a JSON object");
  const event = value as Record<string, unknown>;
  if (event.seq !== seq)
    throw failure(file, seq, `the event has seq ${JSON.stringify(event.seq)}, expected ${seq}`);
  if (typeof event.type !== "string") throw failure(file, seq, "the event has no string type");
  if (typeof event.at !== "number") throw failure(file, seq, "the event has no number at");
  return event as unknown as StoredEvent;
}
