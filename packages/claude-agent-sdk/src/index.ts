export type { LoopguardHooks, LoopguardHooksOptions } from "./loopguard-hooks.js";
export { loopguardHooks } from "./loopguard-hooks.js";
