#!/usr/bin/env node
// The two README commands end here: `npm run demo` and `npm test` on a machine that has only
// Node 20 and npm. This script gets pnpm (pinned), installs, builds, and then runs the demo or
// the whole test suite. It uses nothing but Node's standard library.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pnpmVersion = JSON.parse(
  readFileSync(join(root, "package.json"), "utf8"),
).packageManager.split("@")[1];
const command = process.argv[2];
const rest = process.argv.slice(3);

const env = { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };
// better-sqlite3 builds from source against the system Node headers; pnpm ignores .npmrc for this.
if (!env.npm_config_nodedir) {
  const prefix = dirname(dirname(process.execPath));
  if (existsSync(join(prefix, "include", "node", "node.h"))) env.npm_config_nodedir = prefix;
}

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { cwd: root, stdio: "inherit", env, ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function must(cmd, args, what) {
  const status = run(cmd, args);
  if (status !== 0) {
    console.error(
      `\n[bootstrap] ${what} failed (exit ${status}). Fix the error above and run the command again.`,
    );
    process.exit(status);
  }
}

function findPnpm() {
  const probe = spawnSync("pnpm", ["--version"], { encoding: "utf8", env });
  if (probe.status === 0 && probe.stdout.trim() === pnpmVersion) return "pnpm";
  const local = join(root, ".tools", "node_modules", ".bin", "pnpm");
  if (!existsSync(local)) {
    console.log(
      `[bootstrap] installing pnpm ${pnpmVersion} into .tools/ (corepack is not used: it needs registry signatures)`,
    );
    must(
      "npm",
      [
        "install",
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--prefix",
        join(root, ".tools"),
        `pnpm@${pnpmVersion}`,
      ],
      "installing pnpm",
    );
  }
  // turbo (and pnpm's own scripts) look for `pnpm` on the PATH.
  env.PATH = `${dirname(local)}${process.platform === "win32" ? ";" : ":"}${env.PATH ?? ""}`;
  return local;
}

if (!["demo", "test", "setup", "docs"].includes(command)) {
  console.error("usage: node scripts/bootstrap.mjs demo|test|setup|docs [args...]");
  process.exit(2);
}

const pnpm = findPnpm();
if (command === "demo") {
  // The demo installs and builds only the CLI and the packages it uses, and runs no dependency
  // build scripts: nothing it runs needs a native module (better-sqlite3 is an optional store).
  // pnpm keeps the skipped builds as pending and runs them at the next full install (npm test).
  must(
    pnpm,
    [
      "install",
      "--frozen-lockfile",
      "--ignore-scripts",
      "--filter",
      "loopguard...",
      "--filter",
      ".",
    ],
    "pnpm install (the demo's packages only)",
  );
  must(
    pnpm,
    ["exec", "turbo", "run", "build", "--filter", "loopguard...", "--output-logs=errors-only"],
    "the build",
  );
  // With no arguments the demo tells the whole story (`loopguard demo --tour`); arguments go to
  // `loopguard demo` as given (npm run demo -- --order A1002).
  process.exit(
    run(process.execPath, [
      join(root, "apps/demo/dist/cli.js"),
      "demo",
      ...(rest.length === 0 ? ["--tour"] : rest),
    ]),
  );
}
must(pnpm, ["install", "--frozen-lockfile"], "pnpm install");
// The docs site reads the packages' sources, not their builds: build it and check its links and
// code samples (docs/scripts/build-docs.mjs).
// `docs --build` builds the site without the checks.
if (command === "docs") {
  const build = rest.includes("--build");
  const passed = rest.filter((arg) => arg !== "--build");
  process.exit(
    run(pnpm, [
      "--filter",
      "loopguard-docs",
      "run",
      build ? "site:build" : "site:check",
      ...passed,
    ]),
  );
}
// hash-only: one line per package as it builds, so a long build is never a silent minute.
must(pnpm, ["exec", "turbo", "run", "build", "--output-logs=hash-only"], "the build");

if (command === "setup") process.exit(0);

// command === "test": start what the integration tests need when this machine can, run every
// package's tests, and add up the JSON reports into the one line CI reads.
for (const dir of listPackages()) {
  const report = join(dir, "reports", "vitest.json");
  if (existsSync(report)) spawnSync("rm", ["-f", report]);
}
const status = run(pnpm, [
  "exec",
  "turbo",
  "run",
  "test",
  "--continue",
  "--concurrency=1",
  ...rest,
]);
let passed = 0;
let failed = 0;
let skipped = 0;
const missing = [];
for (const dir of listPackages()) {
  const report = join(dir, "reports", "vitest.json");
  if (!existsSync(report)) {
    if (existsSync(join(dir, "vitest.config.ts"))) missing.push(dir.slice(root.length + 1));
    continue;
  }
  const data = JSON.parse(readFileSync(report, "utf8"));
  passed += data.numPassedTests ?? 0;
  failed += (data.numFailedTests ?? 0) + (data.numRuntimeErrorTests ?? 0);
  skipped += (data.numPendingTests ?? 0) + (data.numTodoTests ?? 0);
  // A file that failed to load counts as a failure even when no test in it ran.
  for (const file of data.testResults ?? [])
    if (file.status === "failed" && (file.assertionResults ?? []).length === 0) failed += 1;
}
if (missing.length > 0) {
  console.error(
    `[bootstrap] no test report from: ${missing.join(", ")} (their test task did not run to the end)`,
  );
  failed += missing.length;
}
if (status !== 0 && failed === 0) failed = 1;
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 || status !== 0 ? 1 : 0);

function listPackages() {
  const packages = ["packages", "apps"].flatMap((group) => {
    const base = join(root, group);
    return existsSync(base) ? readdirSync(base).map((name) => join(base, name)) : [];
  });
  // examples/ is one package of its own (one example per adapter, each run by its tests).
  const examples = join(root, "examples");
  return existsSync(join(examples, "package.json")) ? [...packages, examples] : packages;
}
