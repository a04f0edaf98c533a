import { describeEventStore, memoryEventStore } from "@loopguard/core/testing";

// Core's in-memory store is the reference implementation: it passes the same suite as the
// durable stores (it keeps nothing across a process, so there is no reopen case).
await describeEventStore({
  name: "memoryEventStore",
  create: () => memoryEventStore(),
  // memoryEventStore names nothing after the run id, and accepts any non-empty string.
  acceptsPathLikeRunIds: true,
});
