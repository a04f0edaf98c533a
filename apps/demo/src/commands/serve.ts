import type { Command } from "commander";
import { type CliShared, osUser, pathsOf, positiveInt, withDir } from "../cli-context.js";
import { serve } from "../serve.js";
import { UsageError } from "../usage-error.js";

/** `loopguard serve`: the web approval inbox, run browser and kill switch, and the webhook. */
export function register(program: Command, { out }: CliShared): void {
  withDir(
    program
      .command("serve")
      .description(
        "serve the approval inbox, the run browser and the kill switch as a web page, and the webhook (needs LOOPGUARD_WEBHOOK_SECRET, 16+ characters); prints a one-time sign-in URL first",
      )
      .option("--port <n>", "the port to listen on (0: any free port)", portNumber, 8787)
      .option(
        "--host <address>",
        "the address to bind; anything but 127.0.0.1 is reachable from the network (put TLS in front)",
        "127.0.0.1",
      )
      .option("--user <name>", "who answers are recorded as (default: the OS user)")
      .option(
        "--trust-proxy-header <name>",
        "take the signed-in person's name from this header set by a trusted reverse proxy (e.g. x-forwarded-user)",
      )
      .option(
        "--allowed-host <host:port>",
        "another Host name browsers use to reach this server (a reverse proxy's); repeatable",
        (value: string, previous: string[] = []) => [...previous, value],
      )
      .option(
        "--database-url <url>",
        "serve the worker fleet's runs from PostgreSQL (default: the runs directory); a worker resumes answered runs",
      )
      .option("--schema <name>", "the workers' schema (with --database-url)", "loopguard")
      .option(
        "--agent <module>",
        "answer and resume runs of the agent this module exports (`agent` or default: an agent or ({ runId }) => agent); default: the demo agent",
      ),
  ).action(
    async (options: {
      dir: string;
      port: number;
      host: string;
      user?: string;
      trustProxyHeader?: string;
      allowedHost?: string[];
      agent?: string;
      databaseUrl?: string;
      schema: string;
    }) => {
      const secret = process.env.LOOPGUARD_WEBHOOK_SECRET;
      if (!secret || secret.length < 16)
        throw new UsageError(
          "serve needs LOOPGUARD_WEBHOOK_SECRET (16 characters or more): the webhook takes approvals only from callers who know it, and it signs you in at /login",
        );
      await serve({
        port: options.port,
        secret,
        paths: pathsOf(options),
        out,
        host: options.host,
        user: options.user ?? osUser(),
        ...(options.trustProxyHeader ? { trustProxyHeader: options.trustProxyHeader } : {}),
        ...(options.allowedHost ? { allowedHosts: options.allowedHost } : {}),
        ...(options.agent ? { agentModule: options.agent } : {}),
        ...(options.databaseUrl
          ? { databaseUrl: options.databaseUrl, schema: options.schema }
          : {}),
      });
    },
  );
}

function portNumber(value: string): number {
  if (value === "0") return 0;
  return positiveInt("--port", 65_535)(value);
}
