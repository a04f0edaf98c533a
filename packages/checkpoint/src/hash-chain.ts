/**
 * The hash chain that makes a run's log tamper-evident, in every store of this package.
 *
 * Each event's record carries `chain`, a digest over the previous event's `chain` and this
 * event's exact stored text (`{"seq":n,...}` without the chain):
 *
 *     chain(n) = H(chain(n-1) + "\n" + text(n)),   chain(-1) = "loopguard:" + runId
 *
 * `H` is SHA-256 (`sha256:<hex>`), or HMAC-SHA-256 under `LOOPGUARD_LOG_KEY` (`hmac:<hex>`).
 * Without a key the chain catches corruption and any edit that does not rewrite the rest of
 * the chain; with the key, any edit, deletion, reorder or forged line. The last event's chain
 * (the head) and the event count are kept in the run's summary (file or row), so a log cut
 * short is caught too, as long as the summary is not cut with it.
 */
import { createHash, createHmac } from "node:crypto";
import { InvalidArgumentError } from "@loopguard/core";

/** How a store chains: with a key (HMAC) or without (SHA-256); off only for benchmarks. */
export interface ChainSettings {
  /** HMAC key; without one the chain is plain SHA-256. */
  key: Buffer | undefined;
  /** Whether new events are chained (default true; `false` measures the chain's cost). */
  enabled: boolean;
}

/** The JSON member a chained JSONL line ends with, before its closing brace. */
export const chainMember = ',"chain":"';
/** Length of `sha256:` or `hmac:` plus 64 hex digits: the value of `chain`. */
const hexLength = 64;

/** Resolves the chain settings of a store: its `logKey` option, else `LOOPGUARD_LOG_KEY`. */
export function chainSettings(
  options: { logKey?: string | Buffer; hashChain?: boolean },
  where: string,
): ChainSettings {
  const { logKey, hashChain } = options;
  if (hashChain !== undefined && typeof hashChain !== "boolean")
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: hashChain must be true or false, got ${typeof hashChain}`,
    );
  if (
    logKey !== undefined &&
    !(typeof logKey === "string" && logKey.length >= 16) &&
    !(Buffer.isBuffer(logKey) && logKey.length >= 16)
  ) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: logKey must be a secret of at least 16 characters or bytes (e.g. 32 random bytes, base64), or left out to use LOOPGUARD_LOG_KEY`,
    );
  }
  const fromEnv = process.env.LOOPGUARD_LOG_KEY;
  if (logKey === undefined && fromEnv !== undefined && fromEnv !== "" && fromEnv.length < 16)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: LOOPGUARD_LOG_KEY is set but shorter than 16 characters; use a long random secret (e.g. openssl rand -base64 32)`,
    );
  const key =
    logKey !== undefined ? Buffer.from(logKey) : fromEnv ? Buffer.from(fromEnv, "utf8") : undefined;
  return { key, enabled: hashChain !== false };
}

/** The chain value before a run's first event. */
export function genesis(runId: string): string {
  return `loopguard:${runId}`;
}

/**
 * The chain value of an event: over the previous value and this event's stored text (given
 * as a string, or as its UTF-8 bytes followed by `closing`, so a reader can hash the bytes it
 * read without building the text).
 */
export function link(
  previous: string,
  text: string | Buffer,
  key: Buffer | undefined,
  closing?: string,
): string {
  const hash = key ? createHmac("sha256", key) : createHash("sha256");
  hash.update(`${previous}\n`).update(text);
  if (closing !== undefined) hash.update(closing);
  return `${key ? "hmac" : "sha256"}:${hash.digest("hex")}`;
}

/**
 * The MAC a keyed store puts on a run's summary file: over the run id, the number of events it
 * covers and their head, so a summary rewritten to match a log cut short (its head copied from
 * the log) does not verify without the key.
 */
export function summaryMac(key: Buffer, runId: string, events: number, head: string): string {
  return `hmac:${createHmac("sha256", key).update(`loopguard-summary\n${runId}\n${events}\n${head}`).digest("hex")}`;
}

/** The file a keyed store leaves in its directory: its logs are HMAC-chained (no secret in it). */
export const keyedMarker = ".loopguard-keyed-logs";

/** A JSONL line's text `{"seq":n,...}` (no newline) with its chain member appended. */
export function withChain(text: string, chain: string): string {
  return `${text.slice(0, -1)}${chainMember}${chain}"}`;
}

/**
 * Splits a JSONL line (no newline) into the text the chain covers and its chain value, or
 * returns the line whole with no chain when it does not end with a chain member.
 */
export function splitChain(line: string): { text: string; chain: string | undefined } {
  // `,"chain":"sha256:<64 hex>"}` or `,"chain":"hmac:<64 hex>"}`
  for (const scheme of ["sha256:", "hmac:"]) {
    const length = chainMember.length + scheme.length + hexLength + 2;
    if (line.length < length + 2) continue;
    const start = line.length - length;
    if (line.startsWith(`${chainMember}${scheme}`, start) && line.endsWith('"}'))
      return {
        text: `${line.slice(0, start)}}`,
        chain: line.slice(start + chainMember.length, line.length - 2),
      };
  }
  return { text: line, chain: undefined };
}

/** Where a chain stands while a log is read in order. */
export interface ChainCursor {
  readonly runId: string;
  readonly key: Buffer | undefined;
  /** The last event's chain value (the genesis before the first), or undefined for an unchained log. */
  head: string | undefined;
  /** Whether the log carries a chain (decided by its first event). */
  chained: boolean | undefined;
}

/** A cursor at the start of a run's log. */
export function chainStart(runId: string, key: Buffer | undefined): ChainCursor {
  return { runId, key, head: genesis(runId), chained: undefined };
}

/**
 * Checks one event against the chain and moves the cursor on. Returns why it breaks the
 * chain, or undefined when it holds. A log whose first event has no chain is unchained (one
 * written before the chain existed): accepted without a key, refused with one.
 */
export function advance(
  cursor: ChainCursor,
  text: string | Buffer,
  chain: string | undefined,
  closing?: string,
): string | undefined {
  if (cursor.chained === undefined) {
    cursor.chained = chain !== undefined;
    if (!cursor.chained) {
      cursor.head = undefined;
      return cursor.key
        ? "the log carries no hash chain, but a log key is set: with LOOPGUARD_LOG_KEY every event must carry its HMAC (a log written before the chain, or one forged without it)"
        : undefined;
    }
  }
  if (!cursor.chained) {
    return chain === undefined
      ? undefined
      : "this event carries a hash but the events before it do not: the log was pieced together";
  }
  if (chain === undefined)
    return "this event carries no hash although the events before it do: it was added or rewritten outside loopguard";
  const keyed = chain.startsWith("hmac:");
  if (keyed && !cursor.key) {
    // Without the key an HMAC cannot be checked; the links are taken as they are.
    cursor.head = chain;
    return undefined;
  }
  if (!keyed && cursor.key)
    return "this event carries a plain SHA-256 hash, but a log key is set: with LOOPGUARD_LOG_KEY every event must carry its HMAC (an edit that rewrote the chain without the key)";
  const expected = link(cursor.head!, text, keyed ? cursor.key : undefined, closing);
  if (expected !== chain)
    return "its hash does not follow from the event before it: this event was edited, or one before it was removed, reordered or forged";
  cursor.head = chain;
  return undefined;
}

/** What `verifyLog` found. */
export type VerifyResult =
  | {
      ok: true;
      runId: string;
      /** Events in the log. */
      events: number;
      /** The last event's chain value, when the log is chained. */
      head?: string;
      /** `hmac`: every link checked with the key; `sha256`: unkeyed; `hmac-unchecked`: keyed but no key given; `none`: a log written before the chain. */
      chain: "hmac" | "sha256" | "hmac-unchecked" | "none";
      /** Notes on what was found and accepted (a last line missing only its newline). */
      notes: string[];
    }
  | {
      ok: false;
      runId: string;
      /** The first event that fails (for a cut-off log: the first one missing). */
      firstBadSeq: number;
      reason: string;
      events: number;
    };

/**
 * The result for a log whose every link held: `head` is its last event's chain value, `chained`
 * whether the log carries a chain at all (by default: whether there is a head). Shared by the
 * three stores' `verifyRun`.
 */
export function verifiedLog(
  runId: string,
  events: number,
  head: string | undefined,
  key: Buffer | undefined,
  notes: string[] = [],
  chained: boolean = Boolean(head),
): VerifyResult {
  return {
    ok: true,
    runId,
    events,
    ...(head ? { head } : {}),
    chain: !chained
      ? "none"
      : head?.startsWith("hmac:")
        ? key
          ? "hmac"
          : "hmac-unchecked"
        : "sha256",
    notes,
  };
}

/**
 * For the SQL stores: whether a run's rows agree with what its run row records (the number of
 * events, when recorded, and the head). Returns the failure, or undefined when they agree.
 */
export function runRowMismatch(
  runId: string,
  held: number,
  recorded: { events: number | undefined; head: unknown },
  last: string | undefined,
): VerifyResult | undefined {
  const { events, head } = recorded;
  if (events !== undefined && events !== held)
    return {
      ok: false,
      runId,
      firstBadSeq: Math.min(events, held),
      events: held,
      reason:
        events > held
          ? `the log was cut short: its run row records ${events} events, the table holds ${held}; events ${held} to ${events - 1} were removed`
          : `the table holds ${held} events but the run row records ${events}: events from ${events} on were added outside loopguard`,
    };
  if ((typeof head === "string" ? head : undefined) !== last)
    return {
      ok: false,
      runId,
      firstBadSeq: held - 1,
      events: held,
      reason: `the last event's link is not the head its run row records (${String(head)}): the log was rewritten`,
    };
  return undefined;
}
