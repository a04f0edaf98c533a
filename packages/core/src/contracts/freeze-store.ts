/**
 * The FreezeStore contract: the shared state of the kill switch (a fleet freeze).
 *
 * Failure rule: `status()` rejects when it cannot tell; the kill switch then refuses every call
 * (fail closed) until it can read again.
 */
/** Whether the fleet is frozen, and by whom. */
export interface FreezeStatus {
  frozen: boolean;
  reason?: string;
  /** Who froze (or unfroze) it. */
  by?: string;
  /** When it was set, in milliseconds since the epoch. */
  at?: number;
}

/** What `freeze` records. */
export interface FreezeRequest {
  /** Why: shown to every refused call and in the run's halt reason details. */
  reason: string;
  /** Who: a person or a service. */
  by?: string;
}

/**
 * Where the kill switch reads whether the fleet is frozen: shared by every process that should
 * stop together. `fileFreezeStore` serves one machine; a PostgreSQL store can implement the
 * same interface (`postgresFreezeStore` in `@loopguard/checkpoint` does).
 *
 * Failure rule: `status()` rejects when it cannot tell (unreadable or corrupt state); the kill
 * switch then refuses every call (fail closed) until it can read again. `status()` is called
 * for every tool call, so implementations cache (briefly) and must be cheap.
 */
export interface FreezeStore {
  /** A short name for diagnostics, e.g. `file`, `postgres`. */
  readonly name: string;
  status(): Promise<FreezeStatus>;
  freeze(request: FreezeRequest): Promise<void>;
  unfreeze(options?: { by?: string }): Promise<void>;
}
