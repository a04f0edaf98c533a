// The contract lives in core (packages/core/src/contracts/freeze-store.ts) so every store
// implementation (file here, PostgreSQL in @loopguard/checkpoint) can name it.
export type { FreezeRequest, FreezeStatus, FreezeStore } from "@loopguard/core";
