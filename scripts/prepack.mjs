#!/usr/bin/env node
// The `prepack` of every published package (pnpm pack and npm pack run it in the package's
// folder). It builds the package into a fresh folder beside `dist`, then brings `dist` up to
// date file by file: each file is replaced by a rename (atomic on one filesystem) and only files
// whose source is gone are deleted. `dist` never disappears, so a process that uses it while a
// pack runs (a test run, another package's build, a running CLI) never finds it missing or
// half written, and the tarball still holds exactly what the sources build to.
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dir = process.cwd();
const dist = join(dir, "dist");
const next = join(dir, `.dist-next-${process.pid}`);

/** Every file under a folder, as paths relative to it. */
function filesOf(folder) {
  if (!existsSync(folder)) return [];
  const out = [];
  const walk = (at) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(relative(folder, path));
    }
  };
  walk(folder);
  return out;
}

/** Removes the folders under `folder` (deepest first) that are left empty. */
function pruneEmpty(folder) {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (!statSync(path).isDirectory()) continue;
    pruneEmpty(path);
    if (readdirSync(path).length === 0) rmdirSync(path);
  }
}

// typescript's package exports hide bin/tsc from require.resolve: find its folder instead.
let tsc;
for (const from of [dir, root]) {
  try {
    const manifest = createRequire(join(from, "package.json")).resolve("typescript/package.json");
    tsc = join(dirname(manifest), "bin", "tsc");
    break;
  } catch {
    // try the next place
  }
}
if (!tsc) {
  console.error("[prepack] typescript is not installed: run `npm run setup` in the clone first");
  process.exit(1);
}
rmSync(next, { recursive: true, force: true });
const built = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", next], {
  cwd: dir,
  stdio: "inherit",
});
if (built.error || built.status !== 0) {
  rmSync(next, { recursive: true, force: true });
  console.error(`[prepack] the build failed in ${relative(root, dir)}; dist was left as it was`);
  process.exit(built.status || 1);
}
const fresh = filesOf(next);
const kept = new Set(fresh);
for (const file of fresh) {
  mkdirSync(dirname(join(dist, file)), { recursive: true });
  renameSync(join(next, file), join(dist, file));
}
for (const file of filesOf(dist)) if (!kept.has(file)) unlinkSync(join(dist, file));
pruneEmpty(dist);
rmSync(next, { recursive: true, force: true });
