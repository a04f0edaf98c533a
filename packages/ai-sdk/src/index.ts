export {
  BudgetExceededError,
  GuardedToolError,
  GuardToolsError,
  OutsideRunError,
} from "./errors.js";
export type {
  GuardedToolFlags,
  GuardedToolSet,
  GuardToolsOptions,
  ToolRefusal,
} from "./guard-tools.js";
export { guardTools, isToolRefusal } from "./guard-tools.js";
export type { LoopguardMiddlewareOptions, MiddlewareBudget } from "./loopguard-middleware.js";
export { loopguardMiddleware } from "./loopguard-middleware.js";
