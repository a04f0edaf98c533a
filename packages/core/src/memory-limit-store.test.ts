import { memoryLimitStore } from "./memory-limit-store.js";
import { describeLimitStore } from "./testing/describe-limit-store.js";

await describeLimitStore({ name: "memoryLimitStore", create: () => memoryLimitStore() });
