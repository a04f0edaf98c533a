import { loadPackages } from "@loopguard/evals";
import { type Command, InvalidArgumentError } from "commander";
import { type CliShared, positiveInt } from "../cli-context.js";
import { UsageError } from "../usage-error.js";

/** `loopguard worker`: advances queued runs from PostgreSQL until SIGINT or SIGTERM. */
export function register(program: Command, { out, exit }: CliShared): void {
  program
    .command("worker")
    .description(
      "advance runs queued in PostgreSQL (see: loopguard submit) until SIGINT or SIGTERM",
    )
    .option("--connection <url>", "the PostgreSQL URL (default: DATABASE_URL)")
    .option("--concurrency <n>", "slices this worker runs at once", positiveInt("--concurrency"), 4)
    .option(
      "--schema <name>",
      "the schema of the store, the vault and the demo ledger",
      "loopguard",
    )
    .option(
      "--lease-ms <n>",
      "the job lease; a run whose worker died is retaken after it",
      positiveInt("--lease-ms"),
    )
    .option("--slice-ms <n>", "how long one job advances a run", positiveInt("--slice-ms"))
    .option("--polling-ms <n>", "how often an idle worker polls", positiveInt("--polling-ms"))
    .option(
      "--tenant-concurrency <n>",
      "at most this many runs of one tenant (submit --tenant) advanced at once across the fleet",
      positiveInt("--tenant-concurrency"),
    )
    .option(
      "--tenant-usd-per-day <usd>",
      "each tenant's USD per day (UTC), shared by the fleet (see: loopguard limits)",
      (value: string) => {
        const usd = Number(value);
        if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(usd))
          throw new InvalidArgumentError(
            `--tenant-usd-per-day must be a number of dollars >= 0, got ${JSON.stringify(value)}`,
          );
        return usd;
      },
    )
    .option(
      "--tenant-runs-per-day <n>",
      "each tenant's runs per day (UTC), shared by the fleet",
      positiveInt("--tenant-runs-per-day"),
    )
    .option(
      "--step-delay <ms>",
      "latency of each model step, as a real model has",
      positiveInt("--step-delay"),
    )
    .action(
      async (options: {
        connection?: string;
        concurrency: number;
        schema: string;
        leaseMs?: number;
        sliceMs?: number;
        pollingMs?: number;
        stepDelay?: number;
        tenantConcurrency?: number;
        tenantUsdPerDay?: number;
        tenantRunsPerDay?: number;
      }) => {
        const connectionString = options.connection ?? process.env.DATABASE_URL;
        const checkpoint = (await loadPackages()).modules.checkpoint;
        if (!checkpoint || typeof checkpoint.createWorker !== "function")
          throw new UsageError(
            "worker is not available: this build of @loopguard/checkpoint does not export createWorker (PostgreSQL workers)",
          );
        if (!connectionString)
          throw new UsageError(
            'worker needs a PostgreSQL database: --connection postgres://... or DATABASE_URL (a local one: eval "$(scripts/postgres.sh start)" in a clone of loopguard)',
          );
        const { runWorker } = await import("../worker.js");
        exit(
          await runWorker({
            connectionString,
            concurrency: options.concurrency,
            schema: options.schema,
            ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
            ...(options.sliceMs !== undefined ? { sliceMs: options.sliceMs } : {}),
            ...(options.pollingMs !== undefined ? { pollingIntervalMs: options.pollingMs } : {}),
            ...(options.stepDelay !== undefined ? { stepDelayMs: options.stepDelay } : {}),
            ...(options.tenantConcurrency !== undefined
              ? { tenantConcurrency: options.tenantConcurrency }
              : {}),
            ...(options.tenantUsdPerDay !== undefined
              ? { tenantUsdPerDay: options.tenantUsdPerDay }
              : {}),
            ...(options.tenantRunsPerDay !== undefined
              ? { tenantRunsPerDay: options.tenantRunsPerDay }
              : {}),
            out,
          }),
        );
      },
    );
}
