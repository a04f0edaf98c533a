import { jsonlEventStore, verifyRun } from "@loopguard/checkpoint";
import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";

/**
 * `loopguard verify <runId>`: checks a run's log for tampering (its hash chain, with
 * LOOPGUARD_LOG_KEY every HMAC and the MAC of its summary, and the head kept in its summary).
 * Exits 0 on an intact log, 1 naming the first bad event, 2 with "keyed log: key needed" for a
 * keyed log checked without its key.
 */
export function register(program: Command, { out, colors, exit }: CliShared): void {
  withDir(
    program
      .command("verify")
      .description(
        "check a run's log for tampering (hash chain; every HMAC with LOOPGUARD_LOG_KEY); exits 1 at the first bad event",
      )
      .argument("<runId>", "the run to check"),
  ).action(async (runId: string, options: { dir: string }) => {
    const paths = pathsOf(options);
    const store = jsonlEventStore({ dir: paths.runs });
    try {
      const result = await verifyRun(store, runId);
      if (result.ok && result.chain === "hmac-unchecked") {
        // Without the key a keyed log, genuine or re-chained with plain SHA-256 by someone who
        // lacked the key, cannot be told from a rewritten one: never "intact".
        out(
          `${colors.bold(runId)}: keyed log: key needed (${result.events} events; set LOOPGUARD_LOG_KEY to the key it was written with to check it)`,
        );
        for (const note of result.notes) out(`  note: ${note}`);
        exit(2);
        return;
      }
      if (result.ok) {
        const chain =
          result.chain === "hmac"
            ? "every HMAC checked with LOOPGUARD_LOG_KEY"
            : result.chain === "sha256"
              ? "SHA-256 chain (set LOOPGUARD_LOG_KEY for HMACs that catch a rewritten chain)"
              : "no hash chain (a log written before the chain existed)";
        out(`${colors.bold(runId)}: intact, ${result.events} events; ${chain}`);
        for (const note of result.notes) out(`  note: ${note}`);
        exit(0);
        return;
      }
      out(`${colors.bold(runId)}: BROKEN at event ${result.firstBadSeq}: ${result.reason}`);
      exit(1);
    } finally {
      await store.close();
    }
  });
}
