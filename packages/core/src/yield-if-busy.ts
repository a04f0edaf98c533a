/**
 * Cooperative time slices for the runs of one process. A run that has the CPU (a burst of run
 * starts, a stream whose chunks arrive faster than the loop takes them, a long tool turn) asks
 * at its safe points whether the current turn of the event loop has run longer than
 * {@link turnSliceMs}; if so it waits for the next turn, so timers, I/O and the other runs get
 * the loop in between. Runs waiting for the same turn go on oldest first (the order they were
 * admitted in), so under load early runs finish early instead of every run finishing late.
 *
 * The clock and the scheduling functions are the real ones, taken when this module loads: a
 * test that fakes timers afterwards changes nothing here (a yield is invisible to a run: it
 * goes on one turn later, in the same order).
 */

/** Milliseconds of work one turn of the event loop may take before runs yield. */
export const turnSliceMs = 10;

const clock: { now(): number } = globalThis.performance ?? Date;
/**
 * The next turn of the event loop, where the runtime has one to give and runs of different
 * requests share it (Node, Bun). Elsewhere runs do not yield: without `setImmediate` (Deno,
 * browsers), and on Cloudflare Workers (workerd, `navigator.userAgent` "Cloudflare-Workers"),
 * which serves each request in a context of its own, where a run's promise resolved from a
 * timer another request scheduled never settles (workerd ends that request with "The script
 * will never generate a response").
 */
const nextTurn: ((callback: () => void) => void) | undefined =
  typeof globalThis.setImmediate === "function" &&
  (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent !==
    "Cloudflare-Workers"
    ? globalThis.setImmediate.bind(globalThis)
    : undefined;

let sliceStart: number | undefined;
let turnScheduled = false;
/** Runs waiting for the next turn, kept in order (oldest run first, then arrival). */
let waiting: Array<{ order: number; resume: () => void }> = [];
let runOrder = 0;

/** A new run's place in line (admission order): lower goes first when runs wait for a turn. */
export function nextRunOrder(): number {
  runOrder += 1;
  return runOrder;
}

/**
 * `undefined` while this turn of the event loop is within its slice (go on at once, no
 * promise), else a promise that resolves on a later turn, after the runs with a lower `order`.
 * Call it where a run may pause: between steps, between stream events, before a run starts.
 */
export function yieldIfBusy(order = Number.MAX_SAFE_INTEGER): Promise<void> | undefined {
  if (!nextTurn) return undefined;
  const now = clock.now();
  if (sliceStart === undefined) {
    // The first look in this turn starts its slice; the next turn starts a new one.
    sliceStart = now;
    scheduleTurn();
    return undefined;
  }
  if (now - sliceStart < turnSliceMs) return undefined;
  return new Promise<void>((resume) => {
    let index = waiting.length;
    while (index > 0 && waiting[index - 1]!.order > order) index -= 1;
    waiting.splice(index, 0, { order, resume });
    scheduleTurn();
  });
}

function scheduleTurn(): void {
  if (turnScheduled || !nextTurn) return;
  turnScheduled = true;
  nextTurn(newTurn);
}

function newTurn(): void {
  turnScheduled = false;
  sliceStart = undefined;
  const ready = waiting;
  waiting = [];
  // Resolved in order: their continuations run in this order, the oldest run first.
  for (const entry of ready) entry.resume();
}
