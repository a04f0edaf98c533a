export type {
  DocumentGoal,
  DocumentGoalCall,
  DocumentGoalContext,
  DocumentGoalKind,
} from "./attack-goal.js";
export { deriveAttackGoal } from "./attack-goal.js";
export { crashAfter } from "./crash-after.js";
export type {
  LoadedPackages,
  OptionalPackage,
  Sabotage,
  SupportDefenceOptions,
  SupportDefences,
} from "./defences.js";
export { fixedApprover, loadPackages, sabotageNames, supportDefences } from "./defences.js";
export type { ScorecardColors } from "./format-scorecard.js";
export { formatScorecard } from "./format-scorecard.js";
export type { LiveResult, LiveScorecard } from "./live-scorecard.js";
export { formatLiveScorecard, liveScorecard, wilsonInterval } from "./live-scorecard.js";
export type { Leak, ObservedSurfaces, TraceRenderer } from "./observed-surfaces.js";
export { findLeaks, observedSurfaces } from "./observed-surfaces.js";
export type {
  CorpusRecord,
  CorpusReport,
  CorpusSplit,
  CorpusSubsetReport,
  RunCorpusOptions,
  SkippedRow,
} from "./run-corpus.js";
export {
  bundledCorpusPath,
  CorpusFileError,
  corpusFile,
  corpusSplits,
  defaultCorpusPath,
  externalCorpusPath,
  formatCorpusReport,
  loadCorpus,
  readCorpus,
  runCorpus,
} from "./run-corpus.js";
export type {
  RunScenariosOptions,
  ScenarioResult,
  ScenarioStatus,
  Scorecard,
} from "./run-scenarios.js";
export { runScenarios } from "./run-scenarios.js";
export type {
  Check,
  Scenario,
  ScenarioCategory,
  ScenarioContext,
  ScenarioMeta,
} from "./scenario.js";
export { createScenarioContext, scenario } from "./scenario.js";
export { deskAgentOptions } from "./scenarios/core-scenarios.js";
export { scenarios } from "./scenarios/index.js";
export {
  envelopeBreakoutNeutralised,
  hijackInstruction,
  injectionExfiltrationBlocked,
  injectionRefundHijackBlocked,
} from "./scenarios/injection-scenarios.js";
export type {
  AttackGoal,
  Carrier,
  DefenceConfig,
  SecurityRow,
  SecurityTableOptions,
} from "./security/security-table.js";
export {
  attackGoals,
  carriers,
  defenceConfigs,
  formatSecurityTable,
  runSecurityTable,
  valueForms,
} from "./security/security-table.js";
export type { Customer, KbArticle, Order, SupportDeskFixtures } from "./support-desk/fixtures.js";
export { supportDeskFixtures } from "./support-desk/fixtures.js";
export type { GullibleModelOptions } from "./support-desk/gullible-model.js";
export { gullibleModel } from "./support-desk/gullible-model.js";
export type { SideEffect, SideEffectLedger } from "./support-desk/side-effect-ledger.js";
export { sideEffectLedger } from "./support-desk/side-effect-ledger.js";
export type {
  SupportDesk,
  SupportDeskOptions,
  SupportToolName,
  ToolFault,
} from "./support-desk/support-desk.js";
export { supportDesk } from "./support-desk/support-desk.js";
export type { SupportVault, SupportVaultOptions, VaultEntry } from "./support-vault.js";
export { supportVault } from "./support-vault.js";
