import type { ErrorClassification } from "./contracts/model.js";
import { InvalidArgumentError } from "./errors.js";

/** How model calls are retried. */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 4. */
  maxAttempts?: number;
  /** The first backoff ceiling in ms. Default 500. */
  baseDelayMs?: number;
  /** The largest backoff in ms. Default 20 000. */
  maxDelayMs?: number;
  /** The longest `retry-after` loopguard will honour, in ms. Default 60 000. */
  maxRetryAfterMs?: number;
  /** A random source in [0, 1), for tests. */
  random?: () => number;
}

/** Retry settings with every default filled in. */
export type ResolvedRetryOptions = Required<RetryOptions>;

/** Checks retry options and fills in defaults. */
export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  const resolved = {
    maxAttempts: options.maxAttempts ?? 4,
    baseDelayMs: options.baseDelayMs ?? 500,
    maxDelayMs: options.maxDelayMs ?? 20_000,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    random: options.random ?? Math.random,
  };
  if (
    !Number.isInteger(resolved.maxAttempts) ||
    resolved.maxAttempts < 1 ||
    resolved.maxAttempts > 20
  ) {
    throw new InvalidArgumentError(
      `[core] retry.maxAttempts must be an integer from 1 to 20, got ${String(options.maxAttempts)}`,
    );
  }
  for (const key of ["baseDelayMs", "maxDelayMs", "maxRetryAfterMs"] as const) {
    if (!Number.isFinite(resolved[key]) || resolved[key] < 0) {
      throw new InvalidArgumentError(
        `[core] retry.${key} must be a non-negative number of milliseconds, got ${String(options[key])}`,
      );
    }
  }
  return resolved;
}

/**
 * The wait before retry number `attempt` (1 = the first retry): exponential backoff with full
 * jitter, or the server's `retry-after` when it gave one (capped at `maxRetryAfterMs`).
 */
export function backoffDelay(
  attempt: number,
  classification: ErrorClassification,
  options: ResolvedRetryOptions,
): number {
  if (classification.retryAfterMs !== undefined && classification.retryAfterMs >= 0) {
    return Math.min(classification.retryAfterMs, options.maxRetryAfterMs);
  }
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(options.random() * ceiling);
}

const statusKinds: Record<number, string> = {
  400: "bad_request",
  401: "authentication",
  403: "permission",
  404: "not_found",
  408: "request_timeout",
  409: "conflict",
  413: "request_too_large",
  422: "unprocessable",
  429: "rate_limit",
  500: "server_error",
  502: "bad_gateway",
  503: "unavailable",
  504: "gateway_timeout",
  529: "overloaded",
};

/**
 * Classifies an error by its HTTP status and headers (works on `@anthropic-ai/sdk`'s
 * `APIError` and anything shaped like it): 408, 409, 429, 5xx and 529 and connection errors
 * are retryable; every other status fails at once.
 */
export function classifyError(error: unknown): ErrorClassification {
  const record = (error ?? {}) as {
    status?: unknown;
    headers?: unknown;
    name?: unknown;
    code?: unknown;
  };
  const status = typeof record.status === "number" ? record.status : undefined;
  if (status !== undefined) {
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const retryAfterMs = retryAfterFrom(record.headers);
    return {
      retryable,
      kind: statusKinds[status] ?? (status >= 500 ? "server_error" : "client_error"),
      status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  const name = typeof record.name === "string" ? record.name : "";
  const code = typeof record.code === "string" ? record.code : "";
  if (name === "AbortError" || name === "APIUserAbortError")
    return { retryable: false, kind: "aborted" };
  if (
    /Connection|Timeout|FetchError/i.test(name) ||
    /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/.test(code)
  ) {
    return { retryable: true, kind: "connection" };
  }
  return { retryable: false, kind: "unknown" };
}

/** Reads `retry-after-ms` or `retry-after` (seconds or an HTTP date) from headers. */
export function retryAfterFrom(headers: unknown): number | undefined {
  const get = (name: string): string | undefined => {
    if (!headers) return undefined;
    if (typeof (headers as Headers).get === "function")
      return (headers as Headers).get(name) ?? undefined;
    const value = (headers as Record<string, unknown>)[name];
    return typeof value === "string" ? value : undefined;
  };
  const ms = get("retry-after-ms");
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms)))
    return Math.max(0, Number(ms));
  const after = get("retry-after");
  if (after === undefined || after.trim() === "") return undefined;
  if (Number.isFinite(Number(after))) return Math.max(0, Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
