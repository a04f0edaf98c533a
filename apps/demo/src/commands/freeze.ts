import { loadPackages } from "@loopguard/evals";
import { fileFreezeStore } from "@loopguard/policy/node";
import type { Command } from "commander";
import { type CliShared, osUser, pathsOf, withDir } from "../cli-context.js";
import { UsageError } from "../usage-error.js";

/** The fleet's freeze file store (`@loopguard/policy`), for freeze and unfreeze. */
export async function freezeStoreAt(path: string) {
  const policyModule = (await loadPackages()).modules.policy;
  if (!policyModule)
    throw new UsageError("freeze needs @loopguard/policy, which is not available in this build");
  return fileFreezeStore({ path });
}

/** `loopguard freeze --reason`: the kill switch; every tool call of every run is refused. */
export function register(program: Command, { out, colors }: CliShared): void {
  withDir(
    program
      .command("freeze")
      .description("stop every tool call of every run (the kill switch) until: loopguard unfreeze")
      .requiredOption("--reason <text>", "why: shown to every refused call")
      .option("--as <name>", "who freezes, recorded with the freeze (default: your OS user name)"),
  ).action(async (options: { dir: string; reason: string; as?: string }) => {
    if (options.reason.trim() === "")
      throw new UsageError('freeze needs --reason "why", shown to every refused call');
    const paths = pathsOf(options);
    const store = await freezeStoreAt(paths.freeze);
    await store.freeze({ reason: options.reason, by: options.as ?? osUser() });
    out(
      colors.red(
        `fleet frozen (${paths.freeze}): every tool call is refused as kill_switch until: loopguard unfreeze`,
      ),
    );
  });
}
