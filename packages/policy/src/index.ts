export type { ArgPath } from "./arg-path.js";
export { argPath } from "./arg-path.js";
export { FreezeStoreError, PolicyFrozenError, PolicyValidationError } from "./errors.js";
export type { FreezeRequest, FreezeStatus, FreezeStore } from "./freeze-store.js";
export type { KillSwitchGate, KillSwitchOptions } from "./kill-switch.js";
export { killSwitch } from "./kill-switch.js";
export type {
  ConditionJson,
  LoadedPolicy,
  LoadPolicyOptions,
  PolicyDocument,
} from "./load-policy.js";
export { loadPolicy, policyDocumentSchema } from "./load-policy.js";
export type {
  NoProgressOptions,
  NoProgressSettings,
  NoProgressSignal,
} from "./no-progress.js";
export { noProgressDefaults } from "./no-progress.js";
export type { PolicyGate, PolicyJson, PolicyOptions } from "./policy.js";
export { policy } from "./policy.js";
export type { DomainOptions, Predicate, WhenFunction } from "./predicate.js";
export {
  all,
  any,
  argDomainNotIn,
  argGt,
  argIn,
  argLt,
  argMatches,
  argNotIn,
  not,
} from "./predicate.js";
export type {
  RateLimit,
  RateLimitGate,
  RateLimitOptions,
  StoredRateLimitGate,
} from "./rate-limit.js";
export { rateLimit } from "./rate-limit.js";
export type {
  ReplayChange,
  ReplayOptions,
  ReplayOutcome,
  ReplayReport,
} from "./replay-runs.js";
export { replayRuns } from "./replay-runs.js";
export type { Effect, Rule, RuleInput, RuleOptions } from "./rule.js";
export { allow, ask, deny } from "./rule.js";
export type { RunGuardGate, RunGuardOptions, RunGuardSettings } from "./run-guard.js";
export { runGuard } from "./run-guard.js";
export type { ShadowGate, ShadowOptions } from "./shadow.js";
export { shadow } from "./shadow.js";
export type { TenantBudget, TenantBudgetOptions, TenantDay } from "./tenant-budget.js";
export { tenantBudget } from "./tenant-budget.js";
export type { CompiledWindow, TimeWindow, Weekday } from "./time-window.js";
