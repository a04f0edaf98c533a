#!/usr/bin/env node
// No function over 150 lines in the packages' and the CLI's sources (packages/*/src,
// apps/demo/src; tests excluded): a long closure becomes small modules of one concern each.
// `node scripts/function-length.mjs` runs biome's complexity/noExcessiveLinesPerFunction with
// that one rule and exits 1 naming each function over the limit; `pnpm lint:packages` runs it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const maxLines = 150;

// Data tables: a function that only returns a literal table may be long. None is today; add a
// file here only for such a table, with a comment saying which table it is.
const dataTables = [];

const targets = [
  ...readdirSync(join(root, "packages"))
    .map((name) => join("packages", name, "src"))
    .filter((dir) => existsSync(join(root, dir))),
  "apps/demo/src",
];

const exempt = dataTables.filter((file) => existsSync(join(root, file)));
const config = {
  files: {
    includes: [
      "**",
      "!**/node_modules",
      "!**/dist",
      "!**/__fixtures__",
      "!**/*.test.ts",
      "!**/*.test-d.ts",
      "!**/*.d.ts",
    ],
  },
  formatter: { enabled: false },
  assist: { enabled: false },
  linter: {
    enabled: true,
    rules: {
      preset: "none",
      complexity: { noExcessiveLinesPerFunction: { level: "error", options: { maxLines } } },
    },
  },
  overrides:
    exempt.length > 0
      ? [
          {
            includes: exempt.map((file) => `**/${file}`),
            linter: { rules: { complexity: { noExcessiveLinesPerFunction: "off" } } },
          },
        ]
      : [],
};

const dir = mkdtempSync(join(tmpdir(), "loopguard-function-length-"));
try {
  writeFileSync(join(dir, "biome.json"), JSON.stringify(config, null, 2));
  const result = spawnSync(
    join(root, "node_modules/.bin/biome"),
    ["lint", `--config-path=${dir}`, "--max-diagnostics=none", "--colors=off", ...targets],
    { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  const long = [
    ...output.matchAll(/^(\S+):(\d+):\d+ lint\/complexity\/noExcessiveLinesPerFunction/gm),
  ].map((match) => `${match[1]}:${match[2]}`);
  const counts = [...output.matchAll(/too many lines \((\d+)\)/g)].map((match) => match[1]);
  if (result.status !== 0 && long.length === 0) {
    console.error(`[function-length] biome lint failed:\n${output.trim()}`);
    process.exit(1);
  }
  if (long.length > 0) {
    for (const [index, where] of long.entries())
      console.error(
        `[function-length] ${where}: a function of ${counts[index] ?? "?"} lines (at most ${maxLines}): split it by concern into functions or modules of their own`,
      );
    process.exit(1);
  }
  console.log(
    `[function-length] no function over ${maxLines} lines in ${targets.length} source folders` +
      (exempt.length > 0 ? ` (temporarily exempt: ${exempt.join(", ")})` : ""),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
