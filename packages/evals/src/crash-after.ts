import { type EventStore, InvalidArgumentError, LoopguardError } from "@loopguard/core";

/** The error a `crashAfter` store throws when its process "dies". */
export class SimulatedCrashError extends LoopguardError {
  constructor(appends: number) {
    super(
      "simulated_crash",
      `[evals] simulated crash after ${appends} durable append${appends === 1 ? "" : "s"}`,
    );
  }
}

/**
 * Wraps a store so the process "dies" right after the Nth durable append: the append lands,
 * then `onCrash` runs (the CLI exits the process there), and every later append rejects,
 * as a dead process would write nothing more.
 *
 * @example
 * const store = crashAfter(jsonlEventStore({ dir }), 3, () => process.exit(137));
 */
export function crashAfter(
  store: EventStore,
  appends: number,
  onCrash?: () => void,
): EventStore & { readonly crashed: boolean } {
  if (!Number.isInteger(appends) || appends < 1)
    throw new InvalidArgumentError(
      `[evals] crashAfter(store, n): n must be a positive integer, got ${String(appends)}`,
    );
  let count = 0;
  let crashed = false;
  return {
    name: `${store.name}+crash-after-${appends}`,
    get crashed() {
      return crashed;
    },
    async append(runId, events, options) {
      if (crashed) throw new SimulatedCrashError(appends);
      const result = await store.append(runId, events, options);
      count += 1;
      if (count >= appends) {
        crashed = true;
        onCrash?.();
        throw new SimulatedCrashError(appends);
      }
      return result;
    },
    read: (runId) => store.read(runId),
    list: (filter) => store.list(filter),
    ...(store.close ? { close: () => store.close!() } : {}),
  };
}
