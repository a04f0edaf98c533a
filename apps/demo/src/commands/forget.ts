import { postgresEventStore } from "@loopguard/checkpoint";
import { createKeyring } from "@loopguard/redact";
import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";
import { withDatabase } from "../postgres-connection.js";
import { forgetSubject, postgresSubjectKeyStore, pruneVault, vaultKeys } from "../run-vault.js";
import { UsageError } from "../usage-error.js";

/** Forgets a subject of the worker fleet: deletes its key from `<schema>.subject_keys`. */
async function forgetInPostgres(connectionString: string, schema: string, subject: string) {
  const store = postgresEventStore({ connectionString, schema });
  try {
    return await withDatabase(connectionString, async () => {
      const pool = await store.pool();
      const { rows } = await pool.query(
        `SELECT count(*)::int AS values, count(DISTINCT run_id)::int AS runs FROM "${schema}".vault_entries WHERE entry::json->>'subject' = $1`,
        [subject],
      );
      const keyring = createKeyring({
        keys: vaultKeys(".loopguard/vault"),
        store: postgresSubjectKeyStore(pool, schema),
      });
      const forgotten = await keyring.forget(subject);
      return {
        forgotten,
        values: Number(rows[0]?.values ?? 0),
        runs: Number(rows[0]?.runs ?? 0),
      };
    });
  } finally {
    await store.close();
  }
}

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
      )
      .option("--connection <url>", "forget in the worker fleet's PostgreSQL database instead")
      .option("--schema <name>", "the schema the workers use", "loopguard"),
  ).action(
    async (
      subject: string | undefined,
      options: { dir: string; olderThan?: string; connection?: string; schema: string },
    ) => {
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
      const result =
        options.connection !== undefined
          ? { subject, ...(await forgetInPostgres(options.connection, options.schema, subject)) }
          : await forgetSubject(paths.vault, subject);
      out(
        result.forgotten
          ? colors.green(
              `forgot ${subject}: its key is deleted; ${result.values} value(s) in ${result.runs} run(s) can no longer be revealed (logs and traces keep their tokens)`,
            )
          : `nothing to forget for ${subject}: no key is stored for it in ${options.connection !== undefined ? `${options.schema}.subject_keys` : paths.vault} (never seen, or forgotten before)`,
      );
    },
  );
}
