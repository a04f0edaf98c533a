import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";
import { forgetSubject, pruneVault } from "../run-vault.js";
import { UsageError } from "../usage-error.js";

/**
 * `loopguard forget <subject>`: crypto-shreds one subject (a customer, tenant or run id): its
 * data key is deleted, so none of its vault values can be revealed again, in any run; logs and
 * traces keep their tokens. `--older-than DAYS` applies retention by age to every run instead.
 */
export function register(program: Command, { out, colors }: CliShared): void {
  withDir(
    program
      .command("forget")
      .description(
        "forget a customer: delete the key of their vault values in every run (logs keep only tokens)",
      )
      .argument("[subject]", "the subject to forget: a customer id, tenant or run id")
      .option(
        "--older-than <days>",
        "instead: remove every vault value sealed more than DAYS days ago (retention by age)",
      ),
  ).action(async (subject: string | undefined, options: { dir: string; olderThan?: string }) => {
    const paths = pathsOf(options);
    if (options.olderThan !== undefined) {
      const days = Number(options.olderThan);
      if (subject !== undefined || !(Number.isFinite(days) && days >= 0))
        throw new UsageError(
          "forget --older-than takes a number of days and no subject, e.g. loopguard forget --older-than 30",
        );
      const removed = pruneVault(paths.vault, days * 86_400_000);
      out(
        `removed ${removed} vault value(s) sealed more than ${days} day(s) ago from ${paths.vault}`,
      );
      return;
    }
    if (subject === undefined || subject.trim() === "")
      throw new UsageError(
        "forget needs a subject: loopguard forget <customer, tenant or run id> (or --older-than DAYS)",
      );
    const result = await forgetSubject(paths.vault, subject);
    out(
      result.forgotten
        ? colors.green(
            `forgot ${subject}: its key is deleted; ${result.values} value(s) in ${result.runs} run(s) can no longer be revealed (logs and traces keep their tokens)`,
          )
        : `nothing to forget for ${subject}: no key is stored for it in ${paths.vault} (never seen, or forgotten before)`,
    );
  });
}
