import { submitRun } from "@loopguard/checkpoint";
import {
  type Command,
  InvalidArgumentError as CommanderInvalidArgumentError,
  Option,
} from "commander";
import type { CliShared } from "../cli-context.js";
import { withDatabase } from "../postgres-connection.js";
import { UsageError } from "../usage-error.js";
import { workerAgents } from "../worker.js";

/** `loopguard submit <task>`: queues a run for the workers (`loopguard worker`). */
export function register(program: Command, { out, colors }: CliShared): void {
  program
    .command("submit")
    .description("queue a run for the worker fleet (loopguard worker) and print its run id")
    .argument(
      "<task>",
      'what the agent should do, e.g. "Order A1001 arrived broken, refund please"',
    )
    .addOption(
      new Option("--agent <name>", "the agent the workers run it with")
        .choices(Object.keys(workerAgents))
        .default("support-desk"),
    )
    .option("--connection <url>", "the PostgreSQL URL (default: DATABASE_URL)")
    .option("--schema <name>", "the schema the workers use", "loopguard")
    .option("--run-id <id>", "the run's id (default: a new run_<16 hex>)")
    .option("--tenant <name>", "the customer the run is for (tenant budgets and concurrency)")
    .option(
      "--priority <n>",
      "higher runs are taken first (a whole number, default 0)",
      (value: string) => {
        if (!/^-?\d+$/.test(value))
          throw new CommanderInvalidArgumentError(
            `--priority must be a whole number, got ${JSON.stringify(value)}`,
          );
        return Number(value);
      },
    )
    .action(
      async (
        task: string,
        options: {
          agent: string;
          connection?: string;
          schema: string;
          runId?: string;
          tenant?: string;
          priority?: number;
        },
      ) => {
        if (task.trim() === "")
          throw new UsageError(
            'submit needs a task, e.g. loopguard submit "Order A1001 arrived broken, refund please"',
          );
        const connectionString = options.connection ?? process.env.DATABASE_URL;
        if (!connectionString)
          throw new UsageError(
            'submit needs the workers\' PostgreSQL database: --connection postgres://... or DATABASE_URL (a local one: eval "$(scripts/postgres.sh start)" in a clone of loopguard)',
          );
        const { runId, jobId } = await withDatabase(connectionString, () =>
          submitRun({ connectionString, schema: options.schema }, task, {
            ...(options.runId !== undefined ? { runId: options.runId } : {}),
            ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
            ...(options.priority !== undefined ? { priority: options.priority } : {}),
            context: { attributes: { agent: options.agent } },
          }),
        );
        out(
          jobId === null
            ? `${colors.yellow("already queued")} ${runId}: a worker will advance it`
            : `${colors.green("queued")} ${runId} for the ${options.agent} agent (job ${jobId})`,
        );
        out(
          colors.dim(
            `a worker takes it (loopguard worker --schema ${options.schema}); its events land in ${options.schema}.events`,
          ),
        );
      },
    );
}
