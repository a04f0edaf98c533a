import { jsonlEventStore, verifyRun } from "@loopguard/checkpoint";
import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";

/**
 * `loopguard verify <runId>`: checks a run's log for tampering (its hash chain, with
 * LOOPGUARD_LOG_KEY every HMAC, and the head kept in its summary). Exits 0 on an intact log,
 * 1 naming the first bad event.
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
      if (result.ok) {
        const chain = {
          hmac: "every HMAC checked with LOOPGUARD_LOG_KEY",
          sha256: "SHA-256 chain (set LOOPGUARD_LOG_KEY for HMACs that catch a rewritten chain)",
          "hmac-unchecked":
            "HMAC chain NOT checked: set LOOPGUARD_LOG_KEY to the key it was written with",
          none: "no hash chain (a log written before the chain existed)",
        }[result.chain];
        out(`${colors.bold(runId)}: intact, ${result.events} events; ${chain}`);
        for (const note of result.notes) out(`  note: ${note}`);
        exit(result.chain === "hmac-unchecked" ? 2 : 0);
        return;
      }
      out(`${colors.bold(runId)}: BROKEN at event ${result.firstBadSeq}: ${result.reason}`);
      exit(1);
    } finally {
      await store.close();
    }
  });
}
