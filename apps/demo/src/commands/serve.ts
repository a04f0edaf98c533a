import type { Command } from "commander";
import { type CliShared, pathsOf, positiveInt, withDir } from "../cli-context.js";
import { serve } from "../serve.js";
import { UsageError } from "../usage-error.js";

/** `loopguard serve`: the approval inbox and webhook over HTTP. */
export function register(program: Command, { out }: CliShared): void {
  withDir(
    program
      .command("serve")
      .description(
        "serve the approval inbox and webhook over HTTP (needs LOOPGUARD_WEBHOOK_SECRET, 16+ characters)",
      )
      .option("--port <n>", "the port to listen on", positiveInt("--port", 65_535), 8787),
  ).action(async (options: { dir: string; port: number }) => {
    const secret = process.env.LOOPGUARD_WEBHOOK_SECRET;
    if (!secret || secret.length < 16)
      throw new UsageError(
        "serve needs LOOPGUARD_WEBHOOK_SECRET (16 characters or more): approvals are only taken from callers who know it",
      );
    await serve({ port: options.port, secret, paths: pathsOf(options), out });
  });
}
