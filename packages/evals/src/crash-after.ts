import { type EventStore, InvalidArgumentError } from "@loopguard/core";

/**
 * Wraps a store so the process "dies" right after the Nth durable append: the append lands,
 * then `onCrash` runs (the CLI exits the process there), and every later append never
 * settles, as a dead process writes and hears nothing more; `whenCrashed` resolves at the crash.
 *
 * @example
 * const store = crashAfter(jsonlEventStore({ dir }), 3, () => process.exit(137));
 */
export function crashAfter(
  store: EventStore,
  appends: number,
  onCrash?: () => void,
): EventStore & { readonly crashed: boolean; readonly whenCrashed: Promise<void> } {
  if (
    store === null ||
    typeof store !== "object" ||
    typeof store.append !== "function" ||
    typeof store.read !== "function"
  )
    throw new InvalidArgumentError(
      "[evals] crashAfter(store, n): store must be an EventStore such as jsonlEventStore({ dir }) or memoryEventStore()",
    );
  if (onCrash !== undefined && typeof onCrash !== "function")
    throw new InvalidArgumentError(
      "[evals] crashAfter(store, n, onCrash): onCrash must be a function, e.g. () => process.exit(137)",
    );
  if (!Number.isInteger(appends) || appends < 1)
    throw new InvalidArgumentError(
      `[evals] crashAfter(store, n): n must be a positive integer, got ${String(appends)}`,
    );
  let count = 0;
  let crashed = false;
  let markCrashed: () => void = () => undefined;
  const whenCrashed = new Promise<void>((resolve) => {
    markCrashed = resolve;
  });
  return {
    whenCrashed,
    name: `${store.name}+crash-after-${appends}`,
    get crashed() {
      return crashed;
    },
    async append(runId, events, options) {
      // A dead process never hears back: later appends neither land nor settle.
      if (crashed) return new Promise(() => undefined);
      const result = await store.append(runId, events, options);
      count += 1;
      if (count >= appends) {
        // The Nth append is durable; the process dies now and writes nothing more.
        crashed = true;
        markCrashed();
        onCrash?.();
      }
      return result;
    },
    read: (runId) => store.read(runId),
    list: (filter) => store.list(filter),
    ...(store.close ? { close: () => store.close!() } : {}),
  };
}
