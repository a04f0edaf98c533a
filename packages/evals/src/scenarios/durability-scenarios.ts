import { memoryEventStore } from "@loopguard/core/testing";
import { crashAfter } from "../crash-after.js";
import { type Scenario, scenario } from "../scenario.js";
import { gullibleModel } from "../support-desk/gullible-model.js";
import { sideEffectLedger } from "../support-desk/side-effect-ledger.js";
import { supportVault, type VaultEntry } from "../support-vault.js";
import { deskAgentOptions } from "./core-scenarios.js";

const task = "Hi, order A1001 arrived broken. Can I get a refund?";
// No wall clock: an abandoned "process" would otherwise keep its timer (and this one) alive.
const budget = { maxUsd: 0.5, maxSteps: 15 };

/** A crash at every event boundary, then a resume, gives the uncrashed outcome with one refund. */
export const crashResumeExactlyOnce: Scenario = scenario(
  {
    name: "crash_resume_exactly_once",
    category: "durability",
    title: "A crash at every append boundary, then resume: same outcome, one refund",
    notLive: "needs a deterministic model to compare outcomes",
  },
  async (t) => {
    const model = () => gullibleModel();
    const referenceDesk = t.desk();
    const referenceStore = memoryEventStore();
    const reference = await t
      .agent(deskAgentOptions(t, referenceDesk, { store: referenceStore, model: model(), budget }))
      .run(task, { runId: "run_reference" });
    const total = (await referenceStore.read("run_reference")).length;
    t.check("reference_completes", reference.status === "completed", reference.status);
    t.check(
      "answer_reveals_vault_tokens",
      reference.answer.includes(referenceDesk.fixtures.customers[0]!.email),
      "the receipt address is a token in the log and revealed to the host",
    );
    const failures: string[] = [];
    let boundaries = 0;
    for (let crashAt = 1; crashAt < total; crashAt += 1) {
      const ledger = sideEffectLedger();
      const store = memoryEventStore();
      const runId = `run_crash_${crashAt}`;
      const first = t.desk({ ledger });
      const crashing = crashAfter(store, crashAt);
      // The vault's entries are saved as they are made (the CLI writes them to a 0600 file
      // before a token can reach the log); the new process rebuilds its vault from them.
      const saved: VaultEntry[] = [];
      const vault = supportVault({ onEntry: (entry) => saved.push(structuredClone(entry)) });
      // The first process is abandoned at the crash, as a killed process would be.
      const running = t
        .agent(deskAgentOptions(t, first, { store: crashing, model: model(), vault, budget }))
        .run(task, { runId })
        .then(
          () => undefined,
          () => undefined,
        );
      await Promise.race([running, crashing.whenCrashed]);
      if (!crashing.crashed) break;
      boundaries += 1;
      // A new process: new tools and model, the same store and the same outside world.
      const second = t.desk({ ledger });
      const resumed = await t
        .agent(
          deskAgentOptions(t, second, {
            store,
            model: model(),
            budget,
            vault: supportVault({ entries: saved }),
          }),
        )
        .resume(runId);
      const refunds = ledger.refunds.length;
      if (
        resumed.status !== reference.status ||
        resumed.answer !== reference.answer ||
        refunds !== 1 ||
        ledger.emails.length !== 0
      ) {
        failures.push(
          `crash after append ${crashAt}: ${resumed.status}, ${refunds} refund(s), answer ${JSON.stringify(resumed.answer.slice(0, 40))}`,
        );
      }
    }
    t.check(
      "crashed_at_every_boundary",
      boundaries >= 5,
      `${boundaries} boundaries of ${total} events`,
    );
    t.check(
      "identical_outcome_after_every_resume",
      failures.length === 0,
      failures.slice(0, 2).join("; "),
    );
    t.check(
      "exactly_one_refund_every_time",
      !failures.some((failure) => !failure.includes(" 1 refund")),
      failures.slice(0, 2).join("; "),
    );
  },
);
