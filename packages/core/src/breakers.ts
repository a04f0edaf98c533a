import { type BreakerOptions, CircuitBreaker } from "./circuit-breaker.js";
import type { Tool } from "./tool.js";

const breakers = new WeakMap<object, Map<string, CircuitBreaker>>();

/**
 * The process-wide breaker of a tool: shared by every run and agent in the process that uses
 * the same tool with the same breaker settings (agents with other settings get their own).
 */
export function breakerOf(tool: Tool<any, any>, options?: BreakerOptions): CircuitBreaker {
  let byOptions = breakers.get(tool);
  if (!byOptions) {
    byOptions = new Map();
    breakers.set(tool, byOptions);
  }
  const key = keyOf(options);
  let breaker = byOptions.get(key);
  if (!breaker) {
    breaker = new CircuitBreaker(options);
    byOptions.set(key, breaker);
  }
  return breaker;
}

/** The settings key of a breaker, made once per options object (this runs for every call). */
const keys = new WeakMap<BreakerOptions, string>();
function keyOf(options: BreakerOptions | undefined): string {
  if (!options) return "::";
  let key = keys.get(options);
  if (key === undefined) {
    key = `${options.failureThreshold ?? ""}:${options.cooldownMs ?? ""}:${options.now ? "clock" : ""}`;
    keys.set(options, key);
  }
  return key;
}
