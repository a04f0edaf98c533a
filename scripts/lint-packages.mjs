#!/usr/bin/env node
// Lints what every published package would put on the registry (`pnpm lint:packages`, run by
// .ci/run before the tests). For each package in packages/* and apps/* not marked private, in
// dependency order, one at a time (packing rebuilds a package, and the next one's build reads
// its types):
//
//   1. `pnpm pack` into a temporary folder: runs `prepack` (clean, then build) and rewrites the
//      `workspace:` ranges exactly as `pnpm publish` would;
//   2. the packed package.json: no `workspace:` range left, every `@loopguard/*` or `loopguard`
//      range a caret on the exact 0.x version (`^0.1.0` accepts 0.1.x only), no repository
//      field pointing at a made-up host;
//   3. every source map in the tarball names sources that are in the tarball too;
//   4. `publint --strict` and `attw --profile esm-only` on the tarball (no network);
//   0. before all of it, scripts/import-circles.mjs: no import circle in any package's sources;
//      scripts/no-outside-pointers.mjs; scripts/function-length.mjs: no function over 150 lines.
//
// Exits 1 naming each problem as `[lint:packages] <package>: <what> (<fix>)`.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const localPnpm = join(root, ".tools/node_modules/.bin/pnpm");
const pnpm = existsSync(localPnpm) ? localPnpm : "pnpm";
const bin = (name) => join(root, "node_modules/.bin", name);

const packages = ["packages", "apps"]
  .flatMap((group) =>
    existsSync(join(root, group))
      ? readdirSync(join(root, group)).map((name) => join(root, group, name))
      : [],
  )
  .filter((dir) => existsSync(join(dir, "package.json")))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) }))
  .filter(({ manifest }) => !manifest.private);

// Dependency order, so a package is packed (and rebuilt) after the packages it imports.
const names = new Set(packages.map(({ manifest }) => manifest.name));
const ordered = [];
const visit = (entry, seen = new Set()) => {
  if (ordered.includes(entry) || seen.has(entry)) return;
  seen.add(entry);
  const { dependencies = {}, peerDependencies = {}, devDependencies = {} } = entry.manifest;
  for (const name of Object.keys({ ...dependencies, ...peerDependencies, ...devDependencies }))
    if (names.has(name))
      visit(
        packages.find(({ manifest }) => manifest.name === name),
        seen,
      );
  ordered.push(entry);
};
for (const entry of packages) visit(entry);

function run(command, args, cwd) {
  const result = spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    // prepack scripts call `pnpm`: the copy bootstrap.mjs installed into .tools/ must be found.
    env: {
      ...process.env,
      FORCE_COLOR: "0",
      NO_COLOR: "1",
      PATH: `${dirname(localPnpm)}:${process.env.PATH ?? ""}`,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return {
    ok: !result.error && result.status === 0,
    output: `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? result.error.message : ""}`,
  };
}

const started = Date.now();
const out = mkdtempSync(join(tmpdir(), "loopguard-lint-packages-"));
const problems = [];
// 0. No import circle in any package's sources; contracts import no implementation.
const circles = spawnSync(process.execPath, [join(root, "scripts/import-circles.mjs")], {
  cwd: root,
  stdio: "inherit",
});
if (circles.status !== 0)
  problems.push(
    "sources: import circles (see [import-circles] above; move shared types to a file both sides import)",
  );
// 0b. Comments and docs name paths and decision records, never an issue tracker.
const pointers = spawnSync(process.execPath, [join(root, "scripts/no-outside-pointers.mjs")], {
  cwd: root,
  stdio: "inherit",
});
if (pointers.status !== 0)
  problems.push(
    "sources: pointers out of the repository (see [outside-pointers] above; name the path or the decision record)",
  );
// 0c. No function over 150 lines in packages/*/src and apps/demo/src (tests excluded).
const lengths = spawnSync(process.execPath, [join(root, "scripts/function-length.mjs")], {
  cwd: root,
  stdio: "inherit",
});
if (lengths.status !== 0)
  problems.push(
    "sources: functions over 150 lines (see [function-length] above; split them by concern)",
  );
try {
  for (const { dir, manifest } of ordered) {
    const where = relative(root, dir);
    const fail = (what) => problems.push(`${manifest.name}: ${what}`);
    const packStarted = Date.now();
    const packed = run(pnpm, ["pack", "--pack-destination", out], dir);
    // One tarball at a time in `out`: each is removed once linted.
    const tarball = readdirSync(out).find((name) => name.endsWith(".tgz"));
    if (!packed.ok || tarball === undefined) {
      fail(`pnpm pack (with its prepack build) failed in ${where}:\n${packed.output.trim()}`);
      continue;
    }
    const file = join(out, tarball);
    const listing = run("tar", ["-tzf", file], out);
    const files = new Set(listing.output.split("\n").filter(Boolean));
    const unpacked = join(out, "unpacked");
    rmSync(unpacked, { recursive: true, force: true });
    mkdirSync(unpacked);
    run("tar", ["-xzf", file, "-C", unpacked], out);
    const read = (name) => JSON.parse(readFileSync(join(unpacked, name), "utf8"));
    const shipped = read("package/package.json");

    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"])
      for (const [name, range] of Object.entries(shipped[field] ?? {})) {
        if (String(range).startsWith("workspace:"))
          fail(
            `${field}.${name} is still "${range}" in the tarball (use workspace:^ in package.json)`,
          );
        else if (names.has(name) && !/^\^0\.\d+\.\d+$/.test(range))
          fail(
            `${field}.${name} publishes as "${range}": a 0.x package needs a caret on its version (^0.1.0 accepts 0.1.x: the patches, not the next minor, which may break); write "workspace:^" or "workspace:^0.1.0"`,
          );
      }
    const repository = JSON.stringify(shipped.repository ?? "");
    if (/example\.invalid|example\.com/.test(repository))
      fail(`repository ${repository} is made up: remove the field until the repository is public`);

    const unresolved = [];
    for (const name of files) {
      if (!name.endsWith(".map")) continue;
      const map = read(name);
      for (const source of map.sources ?? []) {
        const target = posix.normalize(
          posix.join(posix.dirname(name), map.sourceRoot ?? "", source),
        );
        if (!files.has(target)) unresolved.push(`${name.slice("package/".length)} -> ${source}`);
      }
    }
    if (unresolved.length > 0)
      fail(
        `${unresolved.length} source map entries name files the tarball does not hold (e.g. ${unresolved[0]}): ship src, or build without maps`,
      );

    const publint = run(bin("publint"), ["run", file, "--strict"], dir);
    if (!publint.ok) fail(`publint --strict:\n${publint.output.trim()}`);
    const attw = run(bin("attw"), [file, "--profile", "esm-only", "--format", "ascii"], dir);
    if (!attw.ok) fail(`attw --profile esm-only:\n${attw.output.trim()}`);
    rmSync(file);
    console.log(
      `[lint:packages] ${manifest.name}: ${publint.ok && attw.ok ? "ok" : "problems"} (${files.size} files, ${((Date.now() - packStarted) / 1000).toFixed(1)} s)`,
    );
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
// 5. After the builds: the entries that must run on Workers reach no node: module in dist.
if (
  spawnSync(process.execPath, [join(root, "scripts/edge-entries.mjs")], { stdio: "inherit" }).status
)
  problems.push("dist: an edge entry reaches a node: module (see [edge-entries] above)");
const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (problems.length > 0) {
  for (const problem of problems) console.error(`[lint:packages] ${problem}`);
  console.error(
    `[lint:packages] ${problems.length} problems in ${ordered.length} packages (${seconds} s)`,
  );
  process.exit(1);
}
console.log(
  `[lint:packages] ${ordered.length} packages: publint --strict, attw, ranges and source maps clean (${seconds} s)`,
);
