import { InvalidArgumentError } from "./errors.js";

/** The state of a breaker. */
export type BreakerState = "closed" | "open" | "half_open";

/** How a tool's circuit breaker behaves. */
export interface BreakerOptions {
  /** Consecutive failures that open the breaker. Default 5. */
  failureThreshold?: number;
  /** Milliseconds the breaker stays open before one probe is let through. Default 30 000. */
  cooldownMs?: number;
  /** The clock, for tests. */
  now?: () => number;
}

/**
 * A circuit breaker: closed, open after N consecutive failures, half-open after a cooldown
 * with a single probe; the probe's success closes it, its failure opens it again.
 */
export class CircuitBreaker {
  #state: BreakerState = "closed";
  #failures = 0;
  #openedAt = 0;
  #probeInFlight = false;
  readonly failureThreshold: number;
  readonly cooldownMs: number;
  readonly #now: () => number;

  constructor(options: BreakerOptions = {}) {
    this.failureThreshold = options.failureThreshold ?? 5;
    this.cooldownMs = options.cooldownMs ?? 30_000;
    this.#now = options.now ?? Date.now;
    if (!Number.isInteger(this.failureThreshold) || this.failureThreshold < 1) {
      throw new InvalidArgumentError(
        `[core] breaker.failureThreshold must be a positive integer, got ${String(options.failureThreshold)}`,
      );
    }
    if (!Number.isFinite(this.cooldownMs) || this.cooldownMs < 0) {
      throw new InvalidArgumentError(
        `[core] breaker.cooldownMs must be a non-negative number, got ${String(options.cooldownMs)}`,
      );
    }
  }

  /** The state now (an open breaker past its cooldown reads as half-open). */
  get state(): BreakerState {
    if (this.#state === "open" && this.#now() - this.#openedAt >= this.cooldownMs)
      return "half_open";
    return this.#state;
  }

  /** Milliseconds until an open breaker lets a probe through. */
  get retryInMs(): number {
    return this.#state === "open"
      ? Math.max(0, this.cooldownMs - (this.#now() - this.#openedAt))
      : 0;
  }

  /** Asks to make a call: `true` lets it through (as the single probe when half-open). */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === "closed") return true;
    if (state === "open") return false;
    if (this.#probeInFlight) return false;
    this.#state = "half_open";
    this.#probeInFlight = true;
    return true;
  }

  /** Records a successful call. */
  onSuccess(): void {
    this.#failures = 0;
    this.#probeInFlight = false;
    this.#state = "closed";
  }

  /** Records a failed call. */
  onFailure(): void {
    this.#probeInFlight = false;
    if (this.#state === "half_open") {
      this.#open();
      return;
    }
    this.#failures += 1;
    if (this.#failures >= this.failureThreshold) this.#open();
  }

  /** Gives back a probe slot that was acquired but not used (the call was refused later). */
  release(): void {
    if (this.#probeInFlight) {
      this.#probeInFlight = false;
      this.#state = "open";
      this.#openedAt = this.#now() - this.cooldownMs;
    }
  }

  #open(): void {
    this.#state = "open";
    this.#openedAt = this.#now();
    this.#failures = 0;
  }
}
