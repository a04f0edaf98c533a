import { createHash, type Hash } from "node:crypto";
import { InvalidArgumentError } from "../errors.js";

/** The usage a simulated request is billed for. */
export interface SimulatedCacheUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

/** Options of {@link promptCacheSimulator}. */
export interface PromptCacheSimulatorOptions {
  /**
   * The minimum cacheable prefix, in tokens: one number for every model, or a function of the
   * model id. Default: 4 096 for Opus and Haiku models, 1 024 otherwise (the documented
   * minimums of the current Opus, Haiku and Sonnet generations).
   */
  minTokens?: number | ((model: string) => number);
  /** The clock, in milliseconds, for TTLs. Default `Date.now`. */
  now?: () => number;
  /** How far back from a breakpoint earlier block boundaries are checked for a hit. Default 20 blocks. */
  lookbackBlocks?: number;
}

/** A prompt cache that behaves as the Messages API documents it, for the loopback server and benchmarks. */
export interface PromptCacheSimulator {
  /**
   * Bills one request: the longest cached prefix ending at (or up to 20 blocks before) a
   * breakpoint is read; the prompt up to the last breakpoint long enough to cache is written;
   * the rest is plain input. Returns an API error message for requests the API refuses (more
   * than 4 breakpoints, a breakpoint on a thinking block, a 1-hour breakpoint after a 5-minute one).
   */
  account(body: unknown): { usage: SimulatedCacheUsage } | { error: string };
  /** Cached prefixes that have not expired. */
  readonly entries: number;
  /** Forgets everything. */
  clear(): void;
}

const ttlMs = { "5m": 5 * 60_000, "1h": 60 * 60_000 } as const;

interface Block {
  tokens: number;
  ttl: "5m" | "1h" | undefined;
}

/**
 * Creates a prompt-cache simulator. Tokens are counted as one per 4 UTF-8 bytes of each
 * block's JSON (without its `cache_control`), in the API's prefix order: tools, then system,
 * then messages. A prefix is identified by a hash chained over the model and every block before
 * the boundary, so any change earlier in the prompt misses, as on the API.
 *
 * @example
 * const cache = promptCacheSimulator({ now: () => clock });
 * const billed = cache.account(requestBody);
 */
export function promptCacheSimulator(
  options: PromptCacheSimulatorOptions = {},
): PromptCacheSimulator {
  const now = options.now ?? Date.now;
  const lookback = options.lookbackBlocks ?? 20;
  const minimum = (model: string): number => {
    const option = options.minTokens;
    if (typeof option === "number") return option;
    if (typeof option === "function") return option(model);
    return /opus|haiku/.test(model) ? 4096 : 1024;
  };
  if (
    options.minTokens !== undefined &&
    typeof options.minTokens !== "function" &&
    (!Number.isInteger(options.minTokens) || options.minTokens < 0)
  ) {
    throw new InvalidArgumentError(
      "[core] promptCacheSimulator: minTokens must be a non-negative integer or a function of the model id",
    );
  }
  const store = new Map<string, { tokens: number; expiresAt: number }>();

  const account = (body: unknown): { usage: SimulatedCacheUsage } | { error: string } => {
    const request = body as {
      model: string;
      tools?: unknown[];
      system?: unknown;
      messages: { role: string; content: unknown }[];
    };
    const blocks: Block[] = [];
    const hashes: string[] = [];
    const hash: Hash = createHash("sha256").update(String(request.model));
    let breakpoints = 0;
    let error: string | undefined;
    const add = (role: string, block: unknown) => {
      let ttl: Block["ttl"];
      let plain = block;
      if (block && typeof block === "object" && "cache_control" in block) {
        const { cache_control, ...rest } = block as { cache_control?: { ttl?: string } | null };
        plain = rest;
        if (cache_control) {
          breakpoints += 1;
          ttl = cache_control.ttl === "1h" ? "1h" : "5m";
          const type = (block as { type?: unknown }).type;
          if (type === "thinking" || type === "redacted_thinking")
            error ??= `messages: cache_control cannot be set on ${String(type)} blocks`;
        }
      }
      const text = JSON.stringify(plain);
      hash.update(`\u0000${role}\u0000${text}`);
      hashes.push(hash.copy().digest("base64"));
      blocks.push({ tokens: Math.ceil(Buffer.byteLength(text) / 4), ttl });
    };
    for (const spec of request.tools ?? []) add("tool", spec);
    if (typeof request.system === "string") add("system", { type: "text", text: request.system });
    else if (Array.isArray(request.system))
      for (const block of request.system) add("system", block);
    for (const message of request.messages) {
      if (typeof message.content === "string")
        add(message.role, { type: "text", text: message.content });
      else if (Array.isArray(message.content))
        for (const block of message.content) add(message.role, block);
    }
    if (error) return { error };
    if (breakpoints > 4)
      return {
        error: `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`,
      };

    const cumulative: number[] = [];
    let total = 0;
    for (const block of blocks) {
      total += block.tokens;
      cumulative.push(total);
    }
    const at = now();
    for (const [key, entry] of store) if (entry.expiresAt <= at) store.delete(key);

    const points = blocks.flatMap((block, index) => (block.ttl ? [index] : []));
    let seenFiveMinute = false;
    for (const index of points) {
      if (blocks[index]!.ttl === "5m") seenFiveMinute = true;
      else if (seenFiveMinute)
        return {
          error:
            "cache_control: a 1h TTL breakpoint must come before any 5m TTL breakpoint in the prompt (tools, system, messages)",
        };
    }
    // The longest prefix already cached, at a breakpoint or up to `lookback` blocks before one.
    let read = 0;
    let readKey: string | undefined;
    for (const index of points) {
      for (let boundary = index; boundary >= 0 && boundary >= index - lookback; boundary -= 1) {
        const key = hashes[boundary]!;
        if (store.has(key) && cumulative[boundary]! > read) {
          read = cumulative[boundary]!;
          readKey = key;
        }
      }
    }
    if (readKey) {
      // A hit refreshes the entry's lifetime.
      const entry = store.get(readKey)!;
      entry.expiresAt = Math.max(entry.expiresAt, at + ttlMs["5m"]);
    }
    const floor = minimum(request.model);
    let covered = read;
    const written = { "5m": 0, "1h": 0 };
    for (const index of points) {
      const tokens = cumulative[index]!;
      const ttl = blocks[index]!.ttl!;
      if (tokens < floor) continue;
      const key = hashes[index]!;
      const previous = store.get(key);
      store.set(key, {
        tokens,
        expiresAt: Math.max(previous?.expiresAt ?? 0, at + ttlMs[ttl]),
      });
      if (tokens > covered) {
        written[ttl] += tokens - covered;
        covered = tokens;
      }
    }
    const creation = written["5m"] + written["1h"];
    return {
      usage: {
        input_tokens: total - read - creation,
        cache_creation_input_tokens: creation,
        cache_read_input_tokens: read,
        cache_creation: {
          ephemeral_5m_input_tokens: written["5m"],
          ephemeral_1h_input_tokens: written["1h"],
        },
      },
    };
  };

  return {
    account,
    get entries() {
      const at = now();
      let live = 0;
      for (const entry of store.values()) if (entry.expiresAt > at) live += 1;
      return live;
    },
    clear() {
      store.clear();
    },
  };
}
