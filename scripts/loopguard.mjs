#!/usr/bin/env node
// `npm run loopguard -- <args>`: runs the built CLI (apps/demo/dist/cli.js). On a clone that is
// not set up yet (nothing installed or built), it says what to run instead of Node's
// MODULE_NOT_FOUND stack. Only Node's standard library: it must work before `npm run setup`.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const needed = [
  ["apps/demo/dist/cli.js", "the built CLI"],
  ["apps/demo/node_modules/commander/package.json", "the CLI's dependencies"],
  ["packages/core/dist/index.js", "the built @loopguard/core"],
];
const missing = needed.filter(([path]) => !existsSync(join(root, path)));
if (missing.length > 0) {
  process.stderr.write(
    `[loopguard] this clone is not set up yet: ${missing.map(([path, what]) => `${what} (${path})`).join(", ")} missing.\n` +
      "Run once:  npm run setup                  (installs with pnpm and builds every package)\n" +
      "Then:      npm run loopguard -- --help\n" +
      "Or just the story, which builds only what it needs:  npm run demo\n",
  );
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  [join(root, "apps/demo/dist/cli.js"), ...process.argv.slice(2)],
  {
    stdio: "inherit",
  },
);
if (result.error) throw result.error;
// A CLI killed by a signal (demo --crash-after ends with SIGKILL) exits as a shell reports it.
process.exit(result.signal ? 128 + (constants.signals[result.signal] ?? 0) : (result.status ?? 1));
