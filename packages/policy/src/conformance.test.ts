import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeFreezeStore, describeGate, memoryLimitStore } from "@loopguard/core/testing";
import { argGt, ask, deny, killSwitch, policy, rateLimit, runGuard } from "./index.js";
import { type FileFreezeStoreOptions, fileFreezeStore } from "./node/index.js";

// Every gate and freeze store of this package runs core's conformance suites first; their own
// cases follow in the other test files.

const freezePath = () => join(mkdtempSync(join(tmpdir(), "lg-freeze-")), "freeze.json");

await describeGate({
  name: "policy",
  create: () => policy([deny("delete_*"), ask("issue_refund", { when: argGt("amount", 500) })]),
  allows: [
    { tool: "lookup_order", args: { order_id: "A1001" } },
    { tool: "issue_refund", args: { order_id: "A1001", amount: 20 } },
  ],
  refuses: [
    { tool: "delete_account", args: { user: "u1" } },
    { tool: "issue_refund", args: { order_id: "A1001", amount: 900 } },
  ],
});

await describeGate({
  name: "killSwitch (not frozen)",
  create: () => killSwitch({ store: fileFreezeStore({ path: freezePath() }) }),
  allows: [{ tool: "issue_refund", args: { order_id: "A1001", amount: 20 } }],
});

await describeGate({
  name: "killSwitch (frozen)",
  create: async () => {
    const store = fileFreezeStore({ path: freezePath() });
    await store.freeze({ reason: "refunds misbehaving", by: "oncall" });
    return killSwitch({ store });
  },
  allows: [],
  refuses: [{ tool: "issue_refund", args: { order_id: "A1001", amount: 20 } }],
});

await describeGate({
  name: "rateLimit (in memory)",
  create: () => rateLimit({ tool: "send_*", capacity: 100, refillPerSecond: 1 }),
  allows: [{ tool: "send_email", args: { to: "a@acme-shop.com" } }],
});

await describeGate({
  name: "rateLimit (LimitStore)",
  create: () =>
    rateLimit({ tool: "send_*", capacity: 100, refillPerSecond: 1 }, { store: memoryLimitStore() }),
  allows: [{ tool: "send_email", args: { to: "a@acme-shop.com" } }],
});

await describeGate({
  name: "runGuard",
  create: () => runGuard({ irreversibleTools: ["issue_refund"] }),
  allows: [
    { tool: "lookup_order", args: { order_id: "A1001" } },
    { tool: "issue_refund", args: { order_id: "A1001", amount: 20 } },
  ],
});

await describeFreezeStore({
  name: "fileFreezeStore",
  create: () => fileFreezeStore({ path: freezePath(), cacheMs: 50 }),
  second: (first) =>
    fileFreezeStore({
      path: (first as unknown as { path: string }).path,
      cacheMs: 50,
    } as FileFreezeStoreOptions),
  propagationMs: 50,
  corrupt: (store) =>
    writeFileSync((store as unknown as { path: string }).path, '{"version":1,"frozen":'),
});
