import { LoopguardError } from "@loopguard/core";
import { Miniflare } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";
import type { D1Database } from "./d1-database.js";
import { d1EventStore } from "./d1-event-store.js";

// Two stores on one real D1 database (workerd's, through miniflare): two Workers resuming the
// same run. The clock is explicit, so expiry needs no waiting.
const miniflare = new Miniflare({
  modules: true,
  script: "export default { fetch: () => new Response('') };",
  d1Databases: { DB: "loopguard-leases" },
  compatibilityDate: "2026-04-01",
});
afterAll(() => miniflare.dispose());
const database = (await miniflare.getD1Database("DB")) as unknown as D1Database;

const codeOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    expect(LoopguardError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^\[cloudflare\] /);
    return (error as LoopguardError).code;
  }
  return "resolved";
};

describe("d1EventStore run leases", () => {
  it("lets one resumer hold a run; a second is refused with RunLockedError until it is released", async () => {
    const first = d1EventStore({ database, leaseTimeoutMs: 0 });
    const second = d1EventStore({ database, leaseTimeoutMs: 0 });
    const lease = await first.acquireRun("run_lease_a");
    expect(await codeOf(second.acquireRun("run_lease_a"))).toBe("run_locked");
    await first.confirmOwner("run_lease_a");
    await lease.release();
    await lease.release();
    const again = await second.acquireRun("run_lease_a");
    await again.release();
  });

  it("waits for a holder that releases within leaseTimeoutMs", async () => {
    const first = d1EventStore({ database });
    const second = d1EventStore({ database, leaseTimeoutMs: 60_000 });
    const lease = await first.acquireRun("run_lease_b");
    const waiting = second.acquireRun("run_lease_b");
    setTimeout(() => void lease.release(), 100);
    await (await waiting).release();
  });

  it("hands an expired lease to the next resumer, and the old holder's confirmOwner then fails", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const first = d1EventStore({ database, leaseTtlMs: 1_000, leaseTimeoutMs: 0, now });
    const second = d1EventStore({ database, leaseTtlMs: 1_000, leaseTimeoutMs: 0, now });
    await first.acquireRun("run_lease_c");
    clock += 500;
    await first.confirmOwner("run_lease_c"); // renews to clock + 1 000
    clock += 900;
    expect(await codeOf(second.acquireRun("run_lease_c"))).toBe("run_locked");
    clock += 200; // past the renewed expiry: the first holder is presumed dead
    const taken = await second.acquireRun("run_lease_c");
    expect(await codeOf(first.confirmOwner("run_lease_c"))).toBe("run_lease_lost");
    await second.confirmOwner("run_lease_c");
    await taken.release();
  });

  it("confirmOwner without a lease does nothing, and bad options are [cloudflare] errors", async () => {
    await d1EventStore({ database }).confirmOwner("run_not_leased");
    expect(() => d1EventStore({ database, leaseTtlMs: -1 })).toThrow(
      /^\[cloudflare\] d1EventStore: leaseTtlMs/,
    );
    expect(() => d1EventStore({ database, now: 5 as never })).toThrow(
      /^\[cloudflare\] d1EventStore: now/,
    );
  });
});
