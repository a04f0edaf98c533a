import type { Command } from "commander";
import { type CliShared, osUser, pathsOf, withDir } from "../cli-context.js";
import { freezeStoreAt } from "./freeze.js";

/** `loopguard unfreeze`: lifts a fleet freeze. */
export function register(program: Command, { out, colors }: CliShared): void {
  withDir(
    program
      .command("unfreeze")
      .description("lift a fleet freeze: tool calls are judged by the policy again")
      .option("--as <name>", "who unfreezes, recorded (default: your OS user name)"),
  ).action(async (options: { dir: string; as?: string }) => {
    const store = await freezeStoreAt(pathsOf(options).freeze);
    await store.unfreeze({ by: options.as ?? osUser() });
    out(colors.green("fleet unfrozen: tool calls are judged by the policy again"));
  });
}
