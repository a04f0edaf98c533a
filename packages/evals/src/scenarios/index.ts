import type { Scenario } from "../scenario.js";
import {
  flakyTools,
  modelOutputEdgeCases,
  parallelToolCalls,
  refundHappyPath,
  runawayLoopBudgets,
  timeouts,
  transientApiErrors,
} from "./core-scenarios.js";
import { crashResumeExactlyOnce } from "./durability-scenarios.js";
import { noPiiInObservability } from "./observability-scenarios.js";

/** Every scenario of the scorecard, in table order. */
export const scenarios: readonly Scenario[] = Object.freeze([
  refundHappyPath,
  parallelToolCalls,
  runawayLoopBudgets,
  timeouts,
  transientApiErrors,
  flakyTools,
  modelOutputEdgeCases,
  crashResumeExactlyOnce,
  noPiiInObservability,
]);
