import type { Scenario } from "../scenario.js";
import { compactionCrashSameRequest, longRunUnderWindow } from "./context-window-scenarios.js";
import {
  flakyTools,
  modelOutputEdgeCases,
  parallelToolCalls,
  refundHappyPath,
  runawayLoopBudgets,
  timeouts,
  transientApiErrors,
} from "./core-scenarios.js";
import {
  delegationApprovalParksBoth,
  delegationHaltLatch,
  delegationLinkedRunsResume,
  delegationOneBudget,
  delegationOneTrace,
  delegationParentPolicyBinds,
  delegationStreamTags,
  delegationTaintCrosses,
} from "./delegation-scenarios.js";
import { crashResumeExactlyOnce } from "./durability-scenarios.js";
import {
  envelopeBreakoutNeutralised,
  injectionExfiltrationBlocked,
  injectionRefundHijackBlocked,
} from "./injection-scenarios.js";
import { noPiiInObservability } from "./observability-scenarios.js";
import {
  durableApprovalAcrossRestart,
  guardOutsideRunRefused,
  humanApprovalGate,
  irreversibleRefusalHaltsRun,
  killSwitchHaltsRun,
  loopWarnedThenHalted,
  noProgressGraded,
  policyLookalikesRefused,
  shadowThenReplay,
  unreadableApprovalHaltsRun,
} from "./run-guard-scenarios.js";

/** Every scenario of the scorecard, in table order. */
export const scenarios: readonly Scenario[] = Object.freeze([
  refundHappyPath,
  parallelToolCalls,
  injectionExfiltrationBlocked,
  injectionRefundHijackBlocked,
  envelopeBreakoutNeutralised,
  runawayLoopBudgets,
  timeouts,
  transientApiErrors,
  flakyTools,
  modelOutputEdgeCases,
  crashResumeExactlyOnce,
  longRunUnderWindow,
  compactionCrashSameRequest,
  noPiiInObservability,
  humanApprovalGate,
  durableApprovalAcrossRestart,
  killSwitchHaltsRun,
  irreversibleRefusalHaltsRun,
  loopWarnedThenHalted,
  unreadableApprovalHaltsRun,
  guardOutsideRunRefused,
  noProgressGraded,
  shadowThenReplay,
  policyLookalikesRefused,
  delegationLinkedRunsResume,
  delegationParentPolicyBinds,
  delegationOneBudget,
  delegationHaltLatch,
  delegationTaintCrosses,
  delegationStreamTags,
  delegationApprovalParksBoth,
  delegationOneTrace,
]);
