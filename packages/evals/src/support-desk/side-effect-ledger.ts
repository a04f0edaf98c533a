/** One side effect the world saw (a refund paid, an email sent). */
export interface SideEffect {
  kind: "refund" | "email";
  /** The idempotency key it was made with: the same key twice does nothing the second time. */
  idempotencyKey: string;
  payload: Record<string, unknown>;
  /** The order in which effects happened, from 1. */
  sequence: number;
}

/** The record of every side effect of the support-desk tools, keyed by idempotency key. */
export interface SideEffectLedger {
  /** Records an effect unless its key was seen; returns the effect and whether it is new. */
  record(
    kind: SideEffect["kind"],
    idempotencyKey: string,
    payload: Record<string, unknown>,
  ): { effect: SideEffect; duplicate: boolean };
  /** Every effect, in order. */
  readonly effects: readonly SideEffect[];
  readonly refunds: readonly SideEffect[];
  readonly emails: readonly SideEffect[];
  /** Calls that arrived with an already-used key (and did nothing). */
  readonly duplicates: number;
}

/**
 * Creates an in-memory side-effect ledger, as a payments or mail API with idempotency keys
 * would behave: the same key twice returns the first effect and changes nothing.
 *
 * @example
 * const ledger = sideEffectLedger();
 * ledger.record("refund", "run_1:toolu_1", { order_id: "A1001", amount: 89.99 });
 * ledger.refunds.length; // 1
 */
export function sideEffectLedger(): SideEffectLedger {
  const effects: SideEffect[] = [];
  const byKey = new Map<string, SideEffect>();
  let duplicates = 0;
  return {
    record(kind, idempotencyKey, payload) {
      const seen = byKey.get(idempotencyKey);
      if (seen) {
        duplicates += 1;
        return { effect: seen, duplicate: true };
      }
      const effect: SideEffect = {
        kind,
        idempotencyKey,
        payload: structuredClone(payload),
        sequence: effects.length + 1,
      };
      effects.push(effect);
      byKey.set(idempotencyKey, effect);
      return { effect, duplicate: false };
    },
    get effects() {
      return effects;
    },
    get refunds() {
      return effects.filter((effect) => effect.kind === "refund");
    },
    get emails() {
      return effects.filter((effect) => effect.kind === "email");
    },
    get duplicates() {
      return duplicates;
    },
  };
}
