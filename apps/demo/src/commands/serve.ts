import { randomBytes } from "node:crypto";
import type { Command } from "commander";
import { type CliShared, osUser, pathsOf, positiveInt, withDir } from "../cli-context.js";
import { serve } from "../serve.js";
import { UsageError } from "../usage-error.js";

/** The addresses only this machine reaches: serve may generate its own secret there. */
const loopback = new Set(["127.0.0.1", "::1", "localhost"]);

/** `loopguard serve`: the web approval inbox, run browser and kill switch, and the webhook. */
export function register(program: Command, { out }: CliShared): void {
  withDir(
    program
      .command("serve")
      .description(
        "serve the approval inbox, the run browser and the kill switch as a web page, and the webhook (LOOPGUARD_WEBHOOK_SECRET, 16+ characters; generated for the process on 127.0.0.1 when unset); prints a one-time sign-in URL first",
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
      let secret = process.env.LOOPGUARD_WEBHOOK_SECRET ?? "";
      let notice: string | undefined;
      if (secret === "" && loopback.has(options.host)) {
        // On this machine only: a secret for this process, said out loud (the webhook needs it).
        secret = randomBytes(24).toString("base64url");
        notice = `LOOPGUARD_WEBHOOK_SECRET was not set, so this process generated one (it lasts until Ctrl-C): ${secret}. The webhook takes it in x-loopguard-secret and /login takes it too; set LOOPGUARD_WEBHOOK_SECRET (16+ characters) to choose your own.`;
      }
      if (secret.length < 16)
        throw new UsageError(
          secret === ""
            ? `serve --host ${options.host} needs LOOPGUARD_WEBHOOK_SECRET (16 characters or more): the server is reachable from the network, so its secret must be one you chose and keep (on 127.0.0.1 serve generates one)`
            : "LOOPGUARD_WEBHOOK_SECRET is shorter than 16 characters: the webhook takes approvals only from callers who know it, and it signs you in at /login; use a longer one (or unset it on 127.0.0.1 and serve generates one)",
        );
      await serve({
        port: options.port,
        secret,
        ...(notice ? { notice } : {}),
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
