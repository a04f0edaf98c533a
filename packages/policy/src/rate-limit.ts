import {
  type CallOutcome,
  type DenyDecision,
  type Gate,
  type GateDecision,
  InvalidArgumentError,
  type JsonValue,
  type LimitStore,
  type ToolCall,
} from "@loopguard/core";
import { canonicalJson, sha256 } from "@loopguard/core/plugin";
import { compileGlobs, type GlobMatcher } from "./glob.js";
import { describeValue } from "./predicate.js";

/** One token bucket: `capacity` calls at once, refilled at `refillPerSecond`. */
export interface RateLimit {
  /** Tool-name globs the limit covers. */
  tool: string | readonly string[];
  /** Maximum burst: the bucket's size. A positive integer. */
  capacity: number;
  /** Tokens added per second (may be fractional: 0.1 is one call per 10 s). */
  refillPerSecond: number;
  /** One bucket per agent id (`run.agentId`) instead of one for everyone. Default `false`. */
  perAgent?: boolean;
  /** One bucket per tool name instead of one shared by every tool the globs match. Default `false`. */
  perTool?: boolean;
}

/** Options of `rateLimit()` besides the limits. */
export interface RateLimitOptions {
  /** The clock (epoch ms). Default `Date.now`. */
  now?: () => number;
  /**
   * Where the buckets live. Default: this process's memory. A `LimitStore`
   * (`memoryLimitStore()` from core keeps today's semantics; `postgresLimitStore` from
   * `@loopguard/checkpoint` shares the buckets across a fleet). With a store `check` is async,
   * and a store that fails refuses the call as `rate_limit_unavailable` (limits fail closed).
   */
  store?: LimitStore;
}

/** The rate-limit gate (step 2.1), with its buckets in this process's memory. */
export interface RateLimitGate extends Gate {
  readonly name: "rate_limit";
  readonly step: "2.1";
  /** The limits, as given (normalised). */
  readonly limits: readonly Readonly<RateLimit>[];
  digest(): string;
  check(call: ToolCall): GateDecision;
  observe(outcome: CallOutcome): void;
}

/** The rate-limit gate (step 2.1) over a `LimitStore`: the same, asynchronous. */
export interface StoredRateLimitGate extends Gate {
  readonly name: "rate_limit";
  readonly step: "2.1";
  readonly limits: readonly Readonly<RateLimit>[];
  digest(): string;
  check(call: ToolCall): Promise<GateDecision>;
  observe(outcome: CallOutcome): Promise<void>;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

interface CompiledLimit {
  limit: RateLimit;
  tool: GlobMatcher;
  index: number;
}

const allowDecision = Object.freeze({ type: "allow" as const });
/** Above this many buckets, full ones are dropped (a full bucket is the same as no bucket). */
const maxBuckets = 10_000;
/** Calls charged but not yet seen finishing, kept to refund later refusals and not charge rechecks twice. */
const maxCharged = 4096;

/**
 * Builds the rate-limit gate (step 2.1, `rate_limit`): token buckets per tool glob, and per
 * agent with `perAgent`. A call takes one token from every bucket that covers it; when one is
 * empty the call is refused as `rate_limited` with the wait in the message and
 * `details.retryAfterMs`. A call charged here but refused at a later step gets its tokens back;
 * a call re-checked after a durable approval is not charged twice (in the same process).
 * Buckets live in this process's memory, or in `store` (a `LimitStore`) to share them.
 *
 * @example
 * rateLimit({ tool: "send_email", perAgent: true, capacity: 5, refillPerSecond: 5 / 60 })
 */
export function rateLimit(
  limits: RateLimit | readonly RateLimit[],
  options: RateLimitOptions & { store: LimitStore },
): StoredRateLimitGate;
export function rateLimit(
  limits: RateLimit | readonly RateLimit[],
  options?: RateLimitOptions,
): RateLimitGate;
export function rateLimit(
  limits: RateLimit | readonly RateLimit[],
  options: RateLimitOptions = {},
): RateLimitGate | StoredRateLimitGate {
  const list = Array.isArray(limits) ? (limits as readonly RateLimit[]) : [limits as RateLimit];
  if (list.length === 0)
    throw new InvalidArgumentError(
      '[policy] rateLimit(limits): give at least one limit such as { tool: "send_email", capacity: 5, refillPerSecond: 0.1 }',
    );
  const compiled: CompiledLimit[] = list.map((limit, index) =>
    compileLimit(limit, list.length === 1 ? "rateLimit" : `rateLimit[${index}]`, index),
  );
  if (options.now !== undefined && typeof options.now !== "function")
    throw new InvalidArgumentError(
      "[policy] rateLimit(limits, { now }): now must be a function returning epoch milliseconds",
    );
  const now = options.now ?? Date.now;
  if (options.store !== undefined) return storeGate(compiled, now, options.store);
  const buckets = new Map<string, Bucket>();
  const charged = new Map<string, string[]>();
  const normalised = compiled.map((entry) => entry.limit);
  const digest = limitsDigest(compiled);

  const refill = (bucket: Bucket, limit: RateLimit, at: number) => {
    if (at > bucket.updatedMs) {
      bucket.tokens = Math.min(
        limit.capacity,
        bucket.tokens + ((at - bucket.updatedMs) / 1000) * limit.refillPerSecond,
      );
      bucket.updatedMs = at;
    }
  };
  const prune = (at: number) => {
    for (const [key, bucket] of buckets) {
      const entry = compiled[Number(key.slice(0, key.indexOf("|")))]!;
      refill(bucket, entry.limit, at);
      if (bucket.tokens >= entry.limit.capacity) buckets.delete(key);
    }
  };

  const gate: RateLimitGate = {
    name: "rate_limit",
    step: "2.1",
    limits: normalised,
    digest: () => digest,
    check(call) {
      // Only core's re-check after a durable approval is free; a reused key is charged as usual.
      if (call.recheck === true && charged.has(call.idempotencyKey)) return allowDecision;
      const at = now();
      let keys: string[] | undefined;
      let blocked: { entry: CompiledLimit; waitMs: number } | undefined;
      for (const entry of compiled) {
        if (!entry.tool.test(call.tool)) continue;
        const key = `${entry.index}|${entry.limit.perTool ? call.tool : ""}|${entry.limit.perAgent ? (call.run?.agentId ?? "") : ""}`;
        let bucket = buckets.get(key);
        if (!bucket) {
          if (buckets.size >= maxBuckets) prune(at);
          bucket = { tokens: entry.limit.capacity, updatedMs: at };
          buckets.set(key, bucket);
        }
        refill(bucket, entry.limit, at);
        if (bucket.tokens < 1) {
          const waitMs = Math.ceil(((1 - bucket.tokens) / entry.limit.refillPerSecond) * 1000);
          if (!blocked || waitMs > blocked.waitMs) blocked = { entry, waitMs };
        }
        if (keys) keys.push(key);
        else keys = [key];
      }
      if (!keys) return allowDecision;
      if (blocked) return refusal(call, blocked.entry.limit, blocked.waitMs);
      for (const key of keys) buckets.get(key)!.tokens -= 1;
      if (charged.size >= maxCharged) charged.delete(charged.keys().next().value!);
      charged.set(call.idempotencyKey, keys);
      return allowDecision;
    },
    observe(outcome) {
      const keys = charged.get(outcome.call.idempotencyKey);
      if (!keys) return;
      charged.delete(outcome.call.idempotencyKey);
      if (outcome.status !== "refused" || outcome.reason === "rate_limited") return;
      // Refused at a later step: the call never ran, so it gives its tokens back.
      for (const key of keys) {
        const bucket = buckets.get(key);
        const entry = compiled[Number(key.slice(0, key.indexOf("|")))]!;
        if (bucket) bucket.tokens = Math.min(entry.limit.capacity, bucket.tokens + 1);
      }
    },
  };
  return Object.freeze(gate);
}

/** The digest of a set of limits (the same with or without a store). */
function limitsDigest(compiled: readonly CompiledLimit[]): string {
  return sha256(
    canonicalJson({
      kind: "rate_limit",
      limits: compiled.map((entry) => entry.limit) as unknown as JsonValue,
    }),
  );
}

/**
 * The rate-limit gate over a LimitStore: each covering bucket is taken in turn, and a refusal
 * gives back what the same call took from the buckets before it, so a call is charged all or
 * nothing. Keys name the limit by its content (not its position), so every process with the
 * same limits shares the same buckets.
 */
function storeGate(
  compiled: readonly CompiledLimit[],
  now: () => number,
  store: LimitStore,
): StoredRateLimitGate {
  if (
    store === null ||
    typeof store !== "object" ||
    typeof store.take !== "function" ||
    typeof store.refund !== "function"
  )
    throw new InvalidArgumentError(
      `[policy] rateLimit(limits, { store }): store must be a LimitStore such as memoryLimitStore() or postgresLimitStore({ connectionString }), got ${describeValue(store)}`,
    );
  const prefixes = compiled.map(
    (entry) =>
      `rate_limit:${sha256(canonicalJson(entry.limit as unknown as JsonValue)).slice(0, 16)}`,
  );
  const charged = new Map<string, Array<{ key: string; entry: CompiledLimit }>>();
  const digest = limitsDigest(compiled);
  const refundAll = async (taken: Array<{ key: string; entry: CompiledLimit }>, at: number) => {
    for (const { key, entry } of taken)
      await store.refund(key, entry.limit as { capacity: number; refillPerSecond: number }, {
        now: at,
      });
  };
  const gate: StoredRateLimitGate = {
    name: "rate_limit",
    step: "2.1",
    limits: compiled.map((entry) => entry.limit),
    digest: () => digest,
    async check(call) {
      if (call.recheck === true && charged.has(call.idempotencyKey)) return allowDecision;
      const at = now();
      const taken: Array<{ key: string; entry: CompiledLimit }> = [];
      try {
        for (const entry of compiled) {
          if (!entry.tool.test(call.tool)) continue;
          const key = `${prefixes[entry.index]}|${entry.limit.perTool ? call.tool : ""}|${entry.limit.perAgent ? (call.run?.agentId ?? "") : ""}`;
          const spec = entry.limit as { capacity: number; refillPerSecond: number };
          const result = await store.take(key, spec, { now: at });
          if (!result.ok) {
            await refundAll(taken, at);
            return refusal(call, entry.limit, result.retryAfterMs);
          }
          taken.push({ key, entry });
        }
      } catch (error) {
        // Limits fail closed: a bucket nobody can read admits nothing. Give back what was taken.
        await refundAll(taken, at).catch(() => undefined);
        return {
          type: "deny",
          reason: "rate_limit_unavailable",
          message: `The rate limit of ${call.tool} could not be checked (${store.name}: ${(error as Error)?.message ?? String(error)}), so the call was refused.`,
          fixHints: [
            `Do not call ${call.tool} again right now; finish with what you have or tell the user to try again shortly.`,
          ],
        };
      }
      if (taken.length === 0) return allowDecision;
      if (charged.size >= maxCharged) charged.delete(charged.keys().next().value!);
      charged.set(call.idempotencyKey, taken);
      return allowDecision;
    },
    async observe(outcome) {
      const taken = charged.get(outcome.call.idempotencyKey);
      if (!taken) return;
      charged.delete(outcome.call.idempotencyKey);
      if (outcome.status !== "refused" || outcome.reason === "rate_limited") return;
      // Refused at a later step: the call never ran, so it gives its tokens back.
      await refundAll(taken, now());
    },
  };
  return Object.freeze(gate);
}

function refusal(call: ToolCall, limit: RateLimit, waitMs: number): DenyDecision {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const scope = `${limit.perTool ? call.tool : typeof limit.tool === "string" ? limit.tool : limit.tool.join(", ")}${limit.perAgent ? ` for agent ${call.run?.agentId ?? "(none)"}` : ""}`;
  return {
    type: "deny",
    reason: "rate_limited",
    message: `The rate limit of ${scope} is reached (${limit.capacity} at once, ${formatRate(limit.refillPerSecond)}); the next call is possible in about ${seconds} s.`,
    fixHints: [
      `Do not call ${call.tool} again right now; finish with what you have or tell the user to try again in about ${seconds} s.`,
    ],
    details: {
      retryAfterMs: waitMs,
      capacity: limit.capacity,
      refillPerSecond: limit.refillPerSecond,
    },
  };
}

function formatRate(perSecond: number): string {
  if (perSecond >= 1) return `${perSecond} per second`;
  if (perSecond * 60 >= 1) return `${Number((perSecond * 60).toFixed(3))} per minute`;
  return `${Number((perSecond * 3600).toFixed(3))} per hour`;
}

function compileLimit(limit: RateLimit, where: string, index: number): CompiledLimit {
  if (limit === null || typeof limit !== "object") {
    throw new InvalidArgumentError(
      `[policy] ${where}: a limit must be an object such as { tool: "send_email", capacity: 5, refillPerSecond: 0.1 }, got ${describeValue(limit)}`,
    );
  }
  const tool = compileGlobs(limit.tool, `${where}.tool`);
  if (!Number.isInteger(limit.capacity) || limit.capacity < 1) {
    throw new InvalidArgumentError(
      `[policy] ${where}.capacity must be a positive integer (the largest burst), got ${describeValue(limit.capacity)}`,
    );
  }
  if (
    typeof limit.refillPerSecond !== "number" ||
    !Number.isFinite(limit.refillPerSecond) ||
    limit.refillPerSecond <= 0
  ) {
    throw new InvalidArgumentError(
      `[policy] ${where}.refillPerSecond must be a positive number of tokens per second (0.1 = one call per 10 s), got ${describeValue(limit.refillPerSecond)}`,
    );
  }
  for (const flag of ["perAgent", "perTool"] as const) {
    if (limit[flag] !== undefined && typeof limit[flag] !== "boolean")
      throw new InvalidArgumentError(
        `[policy] ${where}.${flag} must be a boolean, got ${describeValue(limit[flag])}`,
      );
  }
  const normalised: RateLimit = Object.freeze({
    tool: typeof limit.tool === "string" ? limit.tool : Object.freeze([...limit.tool]),
    capacity: limit.capacity,
    refillPerSecond: limit.refillPerSecond,
    perAgent: limit.perAgent ?? false,
    perTool: limit.perTool ?? false,
  });
  return { limit: normalised, tool, index };
}
