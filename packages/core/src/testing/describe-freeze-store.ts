/**
 * The FreezeStore conformance suite. Every freeze store runs it first, then its own cases.
 * vitest is loaded lazily (see `loadSuite`).
 */
import type { FreezeStore } from "../contracts/freeze-store.js";
import { sleep } from "../retry.js";
import { loadSuite } from "./load-suite.js";

/** What `describeFreezeStore` needs to know about a store under test. */
export interface FreezeStoreSuiteOptions {
  /** The name of the `describe` block, e.g. `fileFreezeStore`. */
  name: string;
  /** A fresh store over fresh state (a new file, a new schema), not frozen. */
  create: () => FreezeStore | Promise<FreezeStore>;
  /**
   * A second store on the same state as `first` (another process's view): the sharing cases
   * run only when this is given.
   */
  second?: (first: FreezeStore) => FreezeStore | Promise<FreezeStore>;
  /** How long a freeze may take to reach another store (its cache). Default 1,000 ms. */
  propagationMs?: number;
  /**
   * Damages the stored state so it cannot be read (a torn file, a broken row): the fail-closed
   * case runs only when this is given.
   */
  corrupt?: (store: FreezeStore) => void | Promise<void>;
  /** Releases a store (and its connections); called after each case. */
  close?: (store: FreezeStore) => void | Promise<void>;
}

/**
 * Registers the FreezeStore conformance cases: a name; not frozen at first; a freeze is
 * reported at once by the store that set it, with its reason, who and when; unfreeze clears
 * it; a freeze without a reason is refused and changes nothing; concurrent status reads all
 * settle; a second store on the same state sees a freeze and an unfreeze within
 * `propagationMs`; unreadable state makes `status()` reject (the kill switch then fails
 * closed) instead of reporting "not frozen".
 *
 * @example
 * await describeFreezeStore({
 *   name: "fileFreezeStore",
 *   create: () => fileFreezeStore({ path: join(mkdtempSync(join(tmpdir(), "lg-")), "freeze.json") }),
 *   second: (first) => fileFreezeStore({ path: (first as FileFreezeStore).path }),
 * });
 */
export async function describeFreezeStore(options: FreezeStoreSuiteOptions): Promise<void> {
  const vitest = await loadSuite(
    "describeFreezeStore",
    options,
    "second, propagationMs, corrupt, close",
  );
  const { afterEach, describe, expect, it } = vitest;
  const open = new Set<FreezeStore>();
  const track = async (made: FreezeStore | Promise<FreezeStore>) => {
    const store = await made;
    open.add(store);
    return store;
  };
  const create = () => track(options.create());
  const propagationMs = options.propagationMs ?? 1000;
  /** Polls `status()` until it says `frozen` (or the propagation time is up). */
  const eventually = async (store: FreezeStore, frozen: boolean) => {
    const deadline = Date.now() + propagationMs + 500;
    for (;;) {
      const status = await store.status();
      if (status.frozen === frozen || Date.now() > deadline) return status;
      await sleep(Math.min(50, propagationMs / 4 + 1));
    }
  };

  describe(`FreezeStore conformance: ${options.name}`, () => {
    afterEach(async () => {
      const stores = [...open];
      open.clear();
      for (const store of stores) await options.close?.(store);
    });

    it("has a name and starts unfrozen", async () => {
      const store = await create();
      expect(typeof store.name).toBe("string");
      expect(store.name.length).toBeGreaterThan(0);
      expect((await store.status()).frozen).toBe(false);
    });

    it("reports its own freeze at once, with reason, who and when; unfreeze clears it", async () => {
      const store = await create();
      const before = Date.now();
      await store.freeze({ reason: "refunds misbehaving", by: "oncall@acme.test" });
      const frozen = await store.status();
      expect(frozen).toMatchObject({
        frozen: true,
        reason: "refunds misbehaving",
        by: "oncall@acme.test",
      });
      expect(typeof frozen.at).toBe("number");
      expect(frozen.at!).toBeGreaterThanOrEqual(before - 1000);
      expect(frozen.at!).toBeLessThanOrEqual(Date.now() + 1000);
      await store.freeze({ reason: "still misbehaving" });
      expect(await store.status()).toMatchObject({ frozen: true, reason: "still misbehaving" });
      await store.unfreeze({ by: "oncall@acme.test" });
      expect((await store.status()).frozen).toBe(false);
      await store.unfreeze();
      expect((await store.status()).frozen).toBe(false);
    });

    it("refuses a freeze without a reason and changes nothing", async () => {
      const store = await create();
      for (const bad of [{ reason: "" }, { reason: "   " }, {}, null]) {
        await expect(store.freeze(bad as never)).rejects.toThrow(/\[[a-z-]+\]/);
      }
      expect((await store.status()).frozen).toBe(false);
    });

    it("settles concurrent status reads with one answer", async () => {
      const store = await create();
      await store.freeze({ reason: "drill" });
      const statuses = await Promise.all(Array.from({ length: 25 }, () => store.status()));
      for (const status of statuses)
        expect(status).toMatchObject({ frozen: true, reason: "drill" });
    });

    if (options.second) {
      const second = options.second;
      it("shares the freeze with a second store on the same state, within propagationMs", async () => {
        const first = await create();
        const other = await track(second(first));
        expect((await other.status()).frozen).toBe(false);
        await first.freeze({ reason: "fleet stop", by: "alice" });
        expect(await eventually(other, true)).toMatchObject({ frozen: true, reason: "fleet stop" });
        await other.unfreeze({ by: "bob" });
        expect((await eventually(first, false)).frozen).toBe(false);
      });
    }

    if (options.corrupt) {
      const corrupt = options.corrupt;
      it("rejects status() on unreadable state instead of reporting not frozen", async () => {
        const store = await create();
        await store.freeze({ reason: "before the damage" });
        await corrupt(store);
        const deadline = Date.now() + propagationMs + 500;
        let outcome: unknown;
        for (;;) {
          outcome = await store.status().then(
            (status) => status,
            (error: unknown) => error,
          );
          if (outcome instanceof Error || Date.now() > deadline) break;
          // A cached answer from before the damage may stand for up to propagationMs.
          expect(outcome).toMatchObject({ frozen: true });
          await sleep(50);
        }
        expect(outcome).toBeInstanceOf(Error);
      });
    }
  });
}
