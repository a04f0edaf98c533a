import { describe, expect, it } from "vitest";
import * as root from "./index.js";

// The root holds what users of the scorecard use (runners, the workload, the scenarios). An
// export added here is a decision: add it to this list in the same change.
describe("@loopguard/evals's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "CorpusFileError",
      "attackGoals",
      "bundledCorpusPath",
      "carriers",
      "corpusFile",
      "corpusSplits",
      "crashAfter",
      "createScenarioContext",
      "defaultCorpusPath",
      "defenceConfigs",
      "deriveAttackGoal",
      "deskAgentOptions",
      "envelopeBreakoutNeutralised",
      "externalCorpusPath",
      "findLeaks",
      "fixedApprover",
      "formatCorpusReport",
      "formatLiveScorecard",
      "formatScorecard",
      "formatSecurityTable",
      "gullibleModel",
      "hijackInstruction",
      "injectionExfiltrationBlocked",
      "injectionRefundHijackBlocked",
      "liveScorecard",
      "loadCorpus",
      "loadPackages",
      "observedSurfaces",
      "readCorpus",
      "runCorpus",
      "runScenarios",
      "runSecurityTable",
      "sabotageNames",
      "scenario",
      "scenarios",
      "sideEffectLedger",
      "supportDefences",
      "supportDesk",
      "supportDeskFixtures",
      "supportVault",
      "valueForms",
      "wilsonInterval",
    ]);
  });
});
