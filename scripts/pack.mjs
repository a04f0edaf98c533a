#!/usr/bin/env node
// Packs every published package of the workspace into a tarball, so loopguard can be installed
// from a clone before anything is on the npm registry:
//
//   node scripts/pack.mjs                 # builds, then writes .tarballs/*.tgz
//   npm install /path/to/loopguard/.tarballs/*.tgz
//
// `pnpm pack` turns `workspace:` ranges into the packages' versions, and npm resolves them to
// the tarballs given in the same install. Run from a clone after `npm run setup` (or npm test).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(root, process.argv[2] ?? ".tarballs");
const pnpm = existsSync(join(root, ".tools/node_modules/.bin/pnpm"))
  ? join(root, ".tools/node_modules/.bin/pnpm")
  : "pnpm";

function must(command, args, cwd, what) {
  const result = spawnSync(command, args, {
    cwd,
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  if (result.error || result.status !== 0) {
    console.error(
      `[pack] ${what} failed (${result.error?.message ?? `exit ${result.status}`}). Run \`npm run setup\` first if dependencies are missing.`,
    );
    process.exit(1);
  }
  return result.stdout;
}

/** The workspace's published packages: every packages/* and apps/* folder not marked private. */
export function publishedPackages() {
  return ["packages", "apps"].flatMap((group) =>
    existsSync(join(root, group))
      ? readdirSync(join(root, group))
          .map((name) => join(root, group, name))
          .filter((dir) => existsSync(join(dir, "package.json")))
          .map((dir) => ({
            dir,
            manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")),
          }))
          .filter(({ manifest }) => !manifest.private)
      : [],
  );
}

const packages = publishedPackages();
const filters = packages.flatMap(({ manifest }) => ["--filter", manifest.name]);
console.log(`[pack] building ${packages.length} packages`);
must(
  pnpm,
  ["exec", "turbo", "run", "build", "--output-logs=errors-only", ...filters],
  root,
  "the build",
);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const { dir, manifest } of packages) {
  must(pnpm, ["pack", "--pack-destination", out], dir, `pnpm pack in ${relative(root, dir)}`);
  console.log(`[pack] ${manifest.name}@${manifest.version}`);
}
const tarballs = readdirSync(out).filter((name) => name.endsWith(".tgz"));
console.log(
  `\n[pack] ${tarballs.length} tarballs in ${relative(process.cwd(), out) || "."}. Install them together (npm resolves each @loopguard dependency to its tarball):`,
);
console.log(`  npm install ${join(out, "*.tgz")}`);
console.log("or only what you need, with the packages it depends on, e.g.:");
console.log(
  `  npm install ${join(out, "loopguard-core-*.tgz")} ${join(out, "loopguard-redact-*.tgz")}`,
);
